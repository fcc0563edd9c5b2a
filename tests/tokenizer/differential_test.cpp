// Differential test against @lenml/tokenizers (a JS port of Hugging Face tokenizers): for every generated
// string of gen_differential.mjs (not normalised: some are deliberately not NFC), our ids must equal the
// reference ids, and both decode(encode(s)) and the streamed decode must equal s, NFC(s) for tokenizers
// that declare an NFC normalizer, or the recorded reference decode where the generator wrote one (llama2).
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/normalize.hpp"
#include "runtime/tokenizer/stream_decoder.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace tk = sluice::tokenizer;
const std::filesystem::path npm_cache = SLUICE_NPM_CACHE;
constexpr std::size_t min_strings = 100000;

std::string escape(std::string_view s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == '\\' || u == '"' || u == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

std::string join(const std::vector<tk::token_id>& ids) {
    std::string out;
    for (const auto id : ids)
        out += std::to_string(id) + " ";
    return out;
}

class differential : public testing::TestWithParam<std::string> {};

TEST_P(differential, ids_and_round_trip_match_reference) {
    const std::string name = GetParam();
    auto tok = tk::load_tokenizer(npm_cache / name / "models" / "tokenizer.json");
    ASSERT_TRUE(tok) << tok.error().message;
    std::ifstream in(npm_cache / "differential" / (name + ".jsonl"));
    ASSERT_TRUE(in) << "run tests/tokenizer/gen_differential.mjs first (ctest does through a fixture)";
    std::string line;
    std::getline(in, line); // header
    std::size_t checked = 0;
    std::size_t id_mismatches = 0;
    std::size_t round_trip_mismatches = 0;
    std::size_t changed_by_nfc = 0;
    const bool normalizes = tok->description().normalizer == tk::normalizer_kind::nfc;
    std::vector<tk::token_id> expected;
    while (std::getline(in, line)) {
        const boost::json::object rec = boost::json::parse(line).as_object();
        const std::string s(rec.at("s").as_string());
        expected.clear();
        for (const auto& v : rec.at("ids").as_array())
            expected.push_back(static_cast<tk::token_id>(v.to_number<int>()));
        const auto ids = tok->encode(s, {.add_special = false, .parse_special = true});
        ++checked;
        if (ids != expected && ++id_mismatches <= 5) {
            ADD_FAILURE() << name << " string " << checked << " \"" << escape(s)
                          << "\"\n  reference: " << join(expected) << "\n  ours:      " << join(ids);
        }
        const std::string nfc = tk::to_nfc(s);
        changed_by_nfc += nfc != s;
        // Where the generator recorded the reference decode (SentencePiece-style decoders), that is the target.
        const auto* reference_decode = rec.if_contains("d");
        const std::string recorded = reference_decode ? std::string(reference_decode->as_string()) : std::string();
        const std::string& text = reference_decode ? recorded : normalizes ? nfc : s;
        const std::string back = tok->decode(ids);
        tk::stream_decoder stream(*tok);
        std::string streamed;
        for (const auto id : ids)
            streamed += stream.push(id);
        streamed += stream.flush();
        if ((back != text || streamed != text) && ++round_trip_mismatches <= 5) {
            ADD_FAILURE() << name << " round trip of \"" << escape(s) << "\" gave \"" << escape(back)
                          << "\", expected \"" << escape(text) << "\", streamed \"" << escape(streamed) << "\"";
        }
    }
    EXPECT_EQ(id_mismatches, 0u) << id_mismatches << " of " << checked << " strings differ";
    EXPECT_EQ(round_trip_mismatches, 0u) << round_trip_mismatches << " of " << checked << " strings do not round-trip";
    EXPECT_GE(checked, min_strings);
    EXPECT_GE(changed_by_nfc, checked / 10) << "the generator should produce text that is not NFC";
    std::printf("%s: %zu strings compared, %zu of them not NFC\n", name.c_str(), checked, changed_by_nfc);
}

INSTANTIATE_TEST_SUITE_P(lenml, differential, testing::Values("qwen3", "llama3", "deepseek_v3", "gptoss", "llama2", "qwen35"));

} // namespace
