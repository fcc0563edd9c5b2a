// Qwen3.5's pre-tokenizer and a tokenizer.json that uses it, against what Hugging Face's tokenizers library gives
// for 3000 generated strings (tests/fixtures/reference/qwen35_tokenizer, tools/reference/make_qwen35_fixtures.py).
#include "runtime/convert/hf_tokenizer.hpp"
#include "runtime/gguf/metadata.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/normalize.hpp"
#include "runtime/tokenizer/pre_tokenizer.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace tk = sluice::tokenizer;
namespace json = boost::json;
using pieces = std::vector<std::string>;

const std::filesystem::path fixture_dir =
    std::filesystem::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference" / "qwen35_tokenizer";

pieces split(tk::pre_tokenizer_kind kind, std::string_view text) {
    std::vector<tk::text_span> spans;
    tk::pre_tokenize(kind, text, spans);
    pieces out;
    for (const auto s : spans)
        out.emplace_back(text.substr(s.begin, s.end - s.begin));
    return out;
}

json::object reference() {
    std::ifstream in(fixture_dir / "reference_encodings.json");
    return json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
}

/// Byte offsets of the pieces, as character offsets (the reference's unit).
std::vector<std::pair<std::size_t, std::size_t>> char_pieces(std::string_view text) {
    std::vector<tk::text_span> spans;
    tk::pre_tokenize(tk::pre_tokenizer_kind::qwen35, text, spans);
    std::vector<std::size_t> char_at(text.size() + 1);
    std::size_t chars = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t len = 1;
        tk::decode_utf8(text, pos, len);
        for (std::size_t b = 0; b < len; ++b)
            char_at[pos + b] = chars;
        pos += len;
        ++chars;
    }
    char_at[text.size()] = chars;
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (const auto s : spans)
        out.emplace_back(char_at[s.begin], char_at[s.end]);
    return out;
}

TEST(qwen35_pre_tokenizer, combining_marks_join_the_letters_they_follow) {
    // "é" spelt e + U+0301: one piece under Qwen3.5's pattern, where Qwen2's splits the mark off.
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen35, "caf\x65\xcc\x81 ok"), (pieces{"caf\x65\xcc\x81", " ok"}));
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen2, "caf\x65\xcc\x81 ok"), (pieces{"cafe", "\xcc\x81", " ok"}));
    // Devanagari vowel signs and viramas (Mc/Mn) stay inside the word.
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen35, "नमस्ते दुनिया"), (pieces{"नमस्ते", " दुनिया"}));
    // A mark after a digit or punctuation is not "other": it starts a letter run of its own.
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen35, "1\xcc\x81"), (pieces{"1", "\xcc\x81"}));
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen35, "!\xcc\x81x"), (pieces{"!\xcc\x81x"}));
    // The rest is Qwen2's: single digits, case-insensitive contractions, line breaks.
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen35, "WE'LL 42\n\n x"),
              (pieces{"WE", "'LL", " ", "4", "2", "\n\n", " x"}));
    EXPECT_EQ(tk::pre_tokenizer_from_name("qwen35"), tk::pre_tokenizer_kind::qwen35);
}

TEST(qwen35_pre_tokenizer, pieces_match_hugging_face_on_generated_strings) {
    const auto ref = reference();
    const auto& strings = ref.at("strings").as_array();
    const auto& want = ref.at("pieces").as_array();
    ASSERT_EQ(strings.size(), 3000u);
    for (std::size_t i = 0; i < strings.size(); ++i) {
        const std::string text(strings[i].as_string());
        std::vector<std::pair<std::size_t, std::size_t>> expected;
        for (const auto& p : want[i].as_array())
            expected.emplace_back(p.as_array()[0].to_number<std::size_t>(), p.as_array()[1].to_number<std::size_t>());
        ASSERT_EQ(char_pieces(text), expected) << "string " << i << ": " << json::serialize(strings[i]);
    }
}

TEST(qwen35_tokenizer, tokenizer_json_encodes_like_hugging_face) {
    auto tok = tk::load_tokenizer(fixture_dir / "tokenizer.json");
    ASSERT_TRUE(tok) << tok.error().message;
    EXPECT_EQ(tok->description().pre, tk::pre_tokenizer_kind::qwen35);
    const auto ref = reference();
    const auto& strings = ref.at("strings").as_array();
    const auto& ids = ref.at("ids").as_array();
    for (std::size_t i = 0; i < strings.size(); ++i) {
        std::vector<tk::token_id> expected;
        for (const auto& id : ids[i].as_array())
            expected.push_back(static_cast<tk::token_id>(id.to_number<std::int64_t>()));
        const std::string text(strings[i].as_string());
        ASSERT_EQ(tok->encode(text), expected) << "string " << i << ": " << json::serialize(strings[i]);
        ASSERT_EQ(tok->decode(expected), tk::to_nfc(text)) << "string " << i; // the NFC normaliser composes
    }
}

TEST(qwen35_tokenizer, converter_writes_qwen35_and_the_gguf_vocabulary_encodes_the_same) {
    sluice::gguf::metadata kv;
    auto w = sluice::convert::write_hf_tokenizer(fixture_dir, 2048, kv);
    ASSERT_TRUE(w) << w.error().message;
    auto v = tk::vocab_from_gguf(kv);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_EQ(v->pre, tk::pre_tokenizer_kind::qwen35);
    EXPECT_EQ(v->normalizer, tk::normalizer_kind::nfc);
    auto from_gguf = tk::tokenizer::create(std::move(*v));
    auto from_json = tk::load_tokenizer(fixture_dir / "tokenizer.json");
    ASSERT_TRUE(from_gguf && from_json);
    const auto ref = reference();
    for (const auto& s : ref.at("strings").as_array()) {
        const std::string text(s.as_string());
        ASSERT_EQ(from_gguf->encode(text), from_json->encode(text)) << json::serialize(s);
    }
}

} // namespace
