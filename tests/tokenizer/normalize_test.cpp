// NFC conformance: every line of the Unicode NormalizationTest.txt installed by Debian's unicode-data package
// (read in place, bzip2-compressed or not) must satisfy the NFC invariants, plus the fast path, invalid bytes
// and the tokenizer.json normalizer declarations.
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/normalize.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <bzlib.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace tk = sluice::tokenizer;
const std::filesystem::path ucd = "/usr/share/unicode";

/// The contents of a bzip2 file; empty when it cannot be read.
std::string read_bz2(const std::filesystem::path& path) {
    std::string out;
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr)
        return out;
    int err = BZ_OK;
    BZFILE* bz = BZ2_bzReadOpen(&err, f, 0, 0, nullptr, 0);
    char buf[1 << 16];
    while (err == BZ_OK) {
        const int n = BZ2_bzRead(&err, bz, buf, sizeof buf);
        if (err == BZ_OK || err == BZ_STREAM_END)
            out.append(buf, static_cast<std::size_t>(n));
    }
    const bool ok = err == BZ_STREAM_END;
    BZ2_bzReadClose(&err, bz);
    std::fclose(f);
    return ok ? out : std::string();
}

/// NormalizationTest.txt, from the plain file if installed so, else from its .bz2 form.
std::string normalization_test_text() {
    if (std::ifstream in(ucd / "NormalizationTest.txt"); in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    return read_bz2(ucd / "NormalizationTest.txt.bz2");
}

/// "1E0A 0323" -> UTF-8.
std::string utf8_of(std::string_view hex_list) {
    std::string out;
    std::istringstream in{std::string(hex_list)};
    std::string word;
    while (in >> word)
        tk::append_utf8(out, static_cast<std::uint32_t>(std::stoul(word, nullptr, 16)));
    return out;
}

std::string hex_of(std::string_view s) {
    std::string out;
    for (std::size_t pos = 0; pos < s.size();) {
        std::size_t len = 0;
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04X ", tk::decode_utf8(s, pos, len));
        out += buf;
        pos += len;
    }
    return out;
}

TEST(nfc, every_normalization_test_line_satisfies_the_nfc_invariants) {
    const std::string text = normalization_test_text();
    ASSERT_FALSE(text.empty()) << "no NormalizationTest.txt(.bz2) in " << ucd << " (install unicode-data)";
    std::istringstream lines(text);
    std::string line;
    std::size_t checked = 0;
    std::size_t failures = 0;
    bool in_part1 = false;
    std::vector<bool> listed_in_part1(0x110000);
    while (std::getline(lines, line)) {
        if (line.starts_with("@Part"))
            in_part1 = line.starts_with("@Part1 ");
        if (line.empty() || line[0] == '#' || line[0] == '@')
            continue;
        if (in_part1)
            listed_in_part1[std::stoul(line, nullptr, 16)] = true;
        std::vector<std::string> c;
        std::size_t start = 0;
        for (int i = 0; i < 5; ++i) {
            const std::size_t semi = line.find(';', start);
            ASSERT_NE(semi, std::string::npos) << line;
            c.push_back(utf8_of(std::string_view(line).substr(start, semi - start)));
            start = semi + 1;
        }
        ++checked;
        // c2 == toNFC(c1) == toNFC(c2) == toNFC(c3); c4 == toNFC(c4) == toNFC(c5)
        const bool ok = tk::to_nfc(c[0]) == c[1] && tk::to_nfc(c[1]) == c[1] && tk::to_nfc(c[2]) == c[1] &&
                        tk::to_nfc(c[3]) == c[3] && tk::to_nfc(c[4]) == c[3];
        if (!ok && ++failures <= 10) {
            ADD_FAILURE() << line << "\n  NFC(c1) = " << hex_of(tk::to_nfc(c[0]))
                          << "\n  NFC(c3) = " << hex_of(tk::to_nfc(c[2]))
                          << "\n  NFC(c5) = " << hex_of(tk::to_nfc(c[4]));
        }
    }
    // Every code point not listed in part 1 is its own NFC.
    for (std::uint32_t cp = 0; cp < 0x110000; ++cp) {
        if (listed_in_part1[cp] || (cp >= 0xD800 && cp <= 0xDFFF))
            continue;
        std::string one;
        tk::append_utf8(one, cp);
        if (tk::to_nfc(one) != one && ++failures <= 10)
            ADD_FAILURE() << "NFC changes unlisted U+" << std::hex << cp;
    }
    EXPECT_EQ(failures, 0u) << failures << " of " << checked << " lines fail";
    EXPECT_GT(checked, 18000u);
    std::printf("NormalizationTest: %zu lines checked\n", checked);
}

TEST(nfc, normalized_text_is_returned_without_copying) {
    std::string scratch = "untouched";
    for (std::string_view s :
         {std::string_view("plain ASCII text"), std::string_view("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"),
          std::string_view("\xEA\xB0\x80"), std::string_view("")}) {
        EXPECT_TRUE(tk::is_nfc_quick(s));
        EXPECT_EQ(tk::to_nfc(s, scratch).data(), s.data());
    }
    EXPECT_EQ(scratch, "untouched");
}

TEST(nfc, composes_reorders_and_maps_singletons) {
    EXPECT_EQ(tk::to_nfc("cafe\xCC\x81"), "caf\xC3\xA9");                          // e + U+0301 -> é
    EXPECT_EQ(tk::to_nfc("\xE2\x84\xAB"), "\xC3\x85");                             // U+212B ANGSTROM SIGN -> Å
    EXPECT_EQ(tk::to_nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81"); // jamo G A G -> 각
    EXPECT_EQ(tk::to_nfc("\xEA\xB0\x80\xE1\x86\xA8"), "\xEA\xB0\x81");             // 가 + final G -> 각
    EXPECT_EQ(tk::to_nfc("a\xCC\x81\xCC\xA3"), "\xE1\xBA\xA1\xCC\x81"); // a + acute + dot below -> ạ + acute
    EXPECT_EQ(tk::to_nfc("\xE0\xA5\x98"), "\xE0\xA4\x95\xE0\xA4\xBC");  // U+0958 is a composition exclusion
    EXPECT_FALSE(tk::is_nfc_quick("e\xCC\x81"));
}

TEST(nfc, invalid_bytes_pass_through_unchanged) {
    EXPECT_EQ(tk::to_nfc("\xFF"
                         "e\xCC\x81\x80"),
              "\xFF\xC3\xA9\x80");
    EXPECT_EQ(tk::to_nfc("\xCC\x81\xE4\xB8"), "\xCC\x81\xE4\xB8"); // leading mark, truncated sequence
    EXPECT_EQ(tk::to_nfc("e\xFF\xCC\x81"), "e\xFF\xCC\x81");       // the byte blocks composition
}

TEST(nfc, tokenizer_json_normalizers_are_read_or_rejected) {
    const auto with = [](std::string_view normalizer) {
        return R"({"normalizer": )" + std::string(normalizer) + R"(, "pre_tokenizer": {"type": "ByteLevel"}, )" +
               R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
    };
    const auto nfc = tk::vocab_from_hf_json(with(R"({"type": "NFC"})"), "");
    ASSERT_TRUE(nfc) << nfc.error().message;
    EXPECT_EQ(nfc->normalizer, tk::normalizer_kind::nfc);
    const auto seq = tk::vocab_from_hf_json(with(R"({"type": "Sequence", "normalizers": [{"type": "NFC"}]})"), "");
    ASSERT_TRUE(seq) << seq.error().message;
    EXPECT_EQ(seq->normalizer, tk::normalizer_kind::nfc);
    const auto empty = tk::vocab_from_hf_json(with(R"({"type": "Sequence", "normalizers": []})"), "");
    ASSERT_TRUE(empty) << empty.error().message;
    EXPECT_EQ(empty->normalizer, tk::normalizer_kind::none);
    const auto none = tk::vocab_from_hf_json(with("null"), "");
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_EQ(none->normalizer, tk::normalizer_kind::none);
    EXPECT_FALSE(tk::vocab_from_hf_json(with(R"({"type": "NFKC"})"), ""));
    EXPECT_FALSE(tk::vocab_from_hf_json(with(R"({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})"), ""));
}

} // namespace
