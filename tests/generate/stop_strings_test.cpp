// Checks the streaming stop-string matcher against hand-made cases and a naive reference on random splits.
#include "runtime/generate/stop_strings.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

namespace rt = sluice::runtime;

struct streamed {
    std::string text; ///< every emit plus the flush, concatenated
    bool stopped = false;
};

/// Streams `pieces` through a matcher, checking the per-step contract on the way.
streamed stream(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
    std::size_t longest = 0;
    for (const auto& s : stops)
        longest = std::max(longest, s.size());
    rt::stop_matcher m(stops);
    streamed out;
    std::size_t received = 0;
    for (const auto& piece : pieces) {
        const auto step = m.push(piece);
        received += piece.size();
        if (out.stopped) {
            EXPECT_TRUE(step.emit.empty() && step.stopped) << "output after a stop";
        }
        out.text += step.emit;
        out.stopped = out.stopped || step.stopped;
        if (!out.stopped) {
            EXPECT_LT(received - out.text.size(), std::max<std::size_t>(longest, 1)) << "held back too much";
        }
    }
    const std::string tail = m.flush();
    if (out.stopped) {
        EXPECT_TRUE(tail.empty());
    }
    out.text += tail;
    out.stopped = out.stopped || m.stopped();
    return out;
}

/// The answer computed on the whole text: everything before the earliest occurrence of any stop string.
streamed reference(const std::string& text, const std::vector<std::string>& stops) {
    std::size_t cut = std::string::npos;
    for (const auto& s : stops) {
        if (!s.empty())
            cut = std::min(cut, text.find(s));
    }
    return streamed{text.substr(0, cut), cut != std::string::npos};
}

std::vector<std::string> bytes_of(const std::string& text) {
    std::vector<std::string> out;
    for (const char c : text)
        out.emplace_back(1, c);
    return out;
}

bool complete_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size())
            return false;
        i += n;
    }
    return true;
}

TEST(stop_matcher, stop_split_across_pieces_is_found) {
    rt::stop_matcher m({"</end>"});
    auto s = m.push("Hello </");
    EXPECT_EQ(s.emit, "Hello ");
    EXPECT_FALSE(s.stopped);
    s = m.push("en");
    EXPECT_EQ(s.emit, "");
    EXPECT_FALSE(s.stopped);
    s = m.push("d> more");
    EXPECT_EQ(s.emit, "");
    EXPECT_TRUE(s.stopped);
    EXPECT_TRUE(m.stopped());
    s = m.push("even more");
    EXPECT_EQ(s.emit, "");
    EXPECT_TRUE(s.stopped);
    EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher, held_back_text_is_released_when_match_fails) {
    rt::stop_matcher m({"STOP"});
    auto s = m.push("ab ST");
    EXPECT_EQ(s.emit, "ab ");
    s = m.push("O");
    EXPECT_EQ(s.emit, "");
    s = m.push("X y");
    EXPECT_EQ(s.emit, "STOX y");
    EXPECT_FALSE(s.stopped);
    // A failed match whose tail starts another candidate releases only the part before it.
    s = m.push("SSTO");
    EXPECT_EQ(s.emit, "S");
    s = m.push("P!");
    EXPECT_EQ(s.emit, "");
    EXPECT_TRUE(s.stopped);
}

TEST(stop_matcher, text_before_stop_is_emitted_exactly) {
    rt::stop_matcher m({"\nUser:"});
    const auto s = m.push("The answer is 42.\nUser: and then");
    EXPECT_EQ(s.emit, "The answer is 42.");
    EXPECT_TRUE(s.stopped);
}

TEST(stop_matcher, earliest_match_wins_among_overlapping_stops) {
    const std::vector<std::string> stops{"bcd", "abc"};
    EXPECT_EQ(stream(stops, {"xabcd"}).text, "x");
    EXPECT_EQ(stream(stops, bytes_of("xabcd")).text, "x");
    // "bc" completes first, but the longer "abcx" started earlier and must be given the chance to finish.
    const std::vector<std::string> waiting{"abcx", "bc"};
    rt::stop_matcher m(waiting);
    EXPECT_EQ(m.push("a").emit, "");
    EXPECT_EQ(m.push("bc").emit, "");
    const auto s = m.push("d");
    EXPECT_EQ(s.emit, "a");
    EXPECT_TRUE(s.stopped);
    EXPECT_EQ(stream(waiting, bytes_of("zabcx")).text, "z");
    EXPECT_TRUE(stream(waiting, bytes_of("zabcx")).stopped);
}

TEST(stop_matcher, utf8_multibyte_stop_strings) {
    // Pieces are whole characters, as the streaming detokenizer produces them; "ü" starts "über" and "🦙".
    const std::vector<std::string> stops{"🦙", "über", "。\n"};
    const std::vector<std::string> pieces{"h", "é", "l", "ü", "b", "u", "ng ", "中", "文", "。", "x", "🦙", "z"};
    rt::stop_matcher m(stops);
    std::string out;
    bool stopped = false;
    for (const auto& p : pieces) {
        const auto s = m.push(p);
        EXPECT_TRUE(complete_utf8(s.emit)) << "after piece " << p;
        out += s.emit;
        stopped = stopped || s.stopped;
    }
    EXPECT_TRUE(stopped);
    EXPECT_EQ(out, "hélübung 中文。x");
    // Split into single bytes the result is the same.
    const std::string text = "hélübung 中文。\nmore";
    EXPECT_EQ(stream(stops, bytes_of(text)).text, "hélübung 中文");
}

TEST(stop_matcher, flush_releases_partial_prefix) {
    rt::stop_matcher m({"<|im_end|>"});
    EXPECT_EQ(m.push("answer<|im").emit, "answer");
    EXPECT_EQ(m.flush(), "<|im");
    EXPECT_FALSE(m.stopped());
    // A complete stop still waiting on a longer, earlier one is cut at flush.
    rt::stop_matcher w({"abcx", "bc"});
    EXPECT_EQ(w.push("abc").emit, "");
    EXPECT_EQ(w.flush(), "a");
    EXPECT_TRUE(w.stopped());
}

TEST(stop_matcher, matched_names_the_stop_string_that_ended_the_text) {
    rt::stop_matcher m({"bcd", "abc"});
    EXPECT_EQ(m.push("xab").emit, "x");
    EXPECT_EQ(m.matched(), "");
    EXPECT_TRUE(m.push("cd").stopped);
    EXPECT_EQ(m.matched(), "abc");
    rt::stop_matcher waiting({"abcx", "bc"});
    EXPECT_TRUE(waiting.push("abcd").stopped);
    EXPECT_EQ(waiting.matched(), "bc");
    rt::stop_matcher flushed({"abcx", "bc"});
    EXPECT_EQ(flushed.push("abc").emit, "");
    EXPECT_EQ(flushed.flush(), "a");
    EXPECT_EQ(flushed.matched(), "bc");
}

TEST(stop_matcher, no_stops_passes_everything_through_immediately) {
    for (const auto& stops : {std::vector<std::string>{}, std::vector<std::string>{""}}) {
        rt::stop_matcher m(stops);
        for (const std::string piece : {"<", "|im_end", "|>", ""}) {
            const auto s = m.push(piece);
            EXPECT_EQ(s.emit, piece);
            EXPECT_FALSE(s.stopped);
        }
        EXPECT_EQ(m.flush(), "");
    }
}

TEST(stop_matcher, validation_rejects_empty_stop_strings) {
    EXPECT_TRUE(rt::validate_stops({}));
    EXPECT_TRUE(rt::validate_stops({"a", "\n\n"}));
    const auto r = rt::validate_stops({"a", "", "b"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "stop[1] must not be empty");
}

TEST(stop_matcher, random_splits_match_the_naive_reference) {
    std::mt19937 gen(2024);
    const std::vector<std::string> alphabet{"a", "b", "c", "é", "🦙"};
    const auto random_string = [&](std::size_t max_units) {
        std::string s;
        const std::size_t n = gen() % (max_units + 1);
        for (std::size_t i = 0; i < n; ++i)
            s += alphabet[gen() % (gen() % 8 == 0 ? alphabet.size() : 3)];
        return s;
    };
    int stopped_cases = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        std::vector<std::string> stops(1 + gen() % 5);
        for (auto& s : stops) {
            do {
                s = random_string(5);
            } while (s.empty());
        }
        const std::string text = random_string(40);
        std::vector<std::string> pieces;
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t len = std::min<std::size_t>(text.size() - at, gen() % 6);
            pieces.push_back(text.substr(at, len));
            at += len;
        }
        const auto want = reference(text, stops);
        const auto got = stream(stops, pieces);
        ASSERT_EQ(got.text, want.text) << "trial " << trial << " text " << text;
        ASSERT_EQ(got.stopped, want.stopped) << "trial " << trial;
        stopped_cases += want.stopped;
    }
    EXPECT_GT(stopped_cases, 5000) << "the random cases should often stop";
    EXPECT_LT(stopped_cases, 19000) << "the random cases should often run to the end";
}

} // namespace
