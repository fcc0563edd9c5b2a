// Checks special-token parsing, BOS/EOS insertion and the end-of-generation set on real vocabularies.
#include "runtime/tokenizer/loaders.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace {

namespace tk = sluice::tokenizer;
const std::filesystem::path vocab_dir = std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab";

bool contains(const std::vector<tk::token_id>& ids, tk::token_id id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(special_tokens, special_text_is_one_token_only_when_parsing_is_on) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    const auto eot = tok->find("<|endoftext|>");
    ASSERT_TRUE(eot);
    const auto parsed = tok->encode("Hi<|endoftext|>there", {.parse_special = true});
    EXPECT_TRUE(contains(parsed, *eot));
    const auto plain = tok->encode("Hi<|endoftext|>there", {.parse_special = false});
    EXPECT_FALSE(contains(plain, *eot));
    EXPECT_EQ(tok->decode(parsed), "Hi<|endoftext|>there");
    EXPECT_EQ(tok->decode(parsed, {.skip_special = true}), "Hithere");
    EXPECT_EQ(tok->decode(plain), "Hi<|endoftext|>there");
}

TEST(special_tokens, end_of_generation_includes_declared_eos) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    ASSERT_TRUE(tok->description().eos);
    EXPECT_TRUE(tok->is_end_of_generation(*tok->description().eos));
    EXPECT_FALSE(tok->is_end_of_generation(*tok->find("Hello")));
}

TEST(special_tokens, sentencepiece_adds_bos_and_space_prefix) {
    auto tok = tk::load_tokenizer(vocab_dir / "ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(tok) << tok.error().message;
    const auto& v = tok->description();
    ASSERT_TRUE(v.bos && v.add_bos);
    const auto ids = tok->encode("Hello world", {.add_special = true});
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), *v.bos);
    EXPECT_EQ(tok->token_text(ids[1]), "\xE2\x96\x81Hello");
    EXPECT_EQ(tok->decode(ids, {.skip_special = true}), "Hello world");
    EXPECT_TRUE(tok->encode("", {.add_special = false}).empty());
}

TEST(special_tokens, loading_a_missing_file_is_an_error_naming_it) {
    auto tok = tk::load_tokenizer("/nonexistent/tokenizer.json");
    ASSERT_FALSE(tok);
    EXPECT_NE(tok.error().message.find("/nonexistent/tokenizer.json"), std::string::npos);
}

TEST(special_tokens, unsupported_pre_tokenizer_is_an_error) {
    const auto v = tk::vocab_from_hf_json(
        R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Whitespace"}})", "");
    ASSERT_FALSE(v);
    EXPECT_NE(v.error().message.find("not supported"), std::string::npos);
}

} // namespace
