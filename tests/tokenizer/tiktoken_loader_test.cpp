// tiktoken.model vocabularies (Kimi-K2's format): the shared test tokenizer written as base64 ranks loads back to
// the same tokens and merges as its tokenizer.json and encodes text identically; special tokens come from
// tokenizer_config.json; malformed lines are errors naming the line.
#include "runtime/tokenizer/byte_level.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace {

namespace tk = sluice::tokenizer;
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string base64(std::string_view bytes) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const auto v = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
                       (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) | std::uint8_t(bytes[i + 2]);
        for (int s = 18; s >= 0; s -= 6)
            out += alphabet[(v >> s) & 63];
    }
    if (i < bytes.size()) {
        std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16;
        if (i + 1 < bytes.size())
            v |= std::uint32_t(std::uint8_t(bytes[i + 1])) << 8;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += i + 1 < bytes.size() ? alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

const fs::path tokenizer_dir = fs::path(SLUICE_SOURCE_DIR) / "tests/fixtures/reference/tokenizer";

TEST(tiktoken_loader, ranks_of_a_bpe_vocabulary_give_back_its_merges_and_encodings) {
    auto json_vocab = tk::vocab_from_hf_json(read(tokenizer_dir / "tokenizer.json"), "");
    ASSERT_TRUE(json_vocab) << json_vocab.error().message;
    // The regular tokens as tiktoken stores them: raw bytes, rank = id (the trainer numbers them in merge order).
    std::string model;
    std::size_t regular = 0;
    for (std::size_t i = 0; i < json_vocab->tokens.size(); ++i) {
        if (json_vocab->types[i] != tk::token_type::normal)
            continue;
        auto bytes = tk::decode_byte_level(json_vocab->tokens[i]);
        ASSERT_TRUE(bytes) << json_vocab->tokens[i];
        model += base64(*bytes) + " " + std::to_string(i) + "\n";
        ++regular;
    }
    const std::string config = R"({"added_tokens_decoder": {"1997": {"content": "<|endoftext|>", "special": true},
        "1998": {"content": "<|im_start|>", "special": true}, "1999": {"content": "<|im_end|>", "special": true}},
        "bos_token": "<|endoftext|>", "eos_token": {"content": "<|im_end|>"}, "chat_template": "{{ messages }}"})";
    auto v = tk::vocab_from_tiktoken(model, config);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_EQ(v->pre, tk::pre_tokenizer_kind::kimi_k2);
    ASSERT_EQ(v->tokens.size(), 2000u);
    for (std::size_t i = 0; i < regular; ++i)
        ASSERT_EQ(v->tokens[i], json_vocab->tokens[i]) << i;
    EXPECT_EQ(v->merges, json_vocab->merges);
    EXPECT_EQ(v->tokens[1999], "<|im_end|>");
    EXPECT_EQ(v->types[1999], tk::token_type::control);
    EXPECT_EQ(v->bos, std::optional<tk::token_id>(1997));
    EXPECT_EQ(v->eos, std::optional<tk::token_id>(1999));
    EXPECT_EQ(v->chat_template, "{{ messages }}");
    // Same splits, same ids: the merges derived from ranks encode like the file's own merges.
    v->pre = json_vocab->pre;
    v->normalizer = json_vocab->normalizer;
    auto a = tk::tokenizer::create(*v);
    auto b = tk::tokenizer::create(*json_vocab);
    ASSERT_TRUE(a && b);
    const std::string text = read(fs::path(SLUICE_SOURCE_DIR) / "runtime/tokenizer/bpe_model.cpp") +
                             "héllo wörld 123 naïve 'quote' \t end\n";
    EXPECT_EQ(a->encode(text), b->encode(text));
}

TEST(tiktoken_loader, malformed_lines_are_errors_naming_the_line) {
    for (const char* model :
         {"YQ== 0\nYg== x\n", "YQ== 0\n!!!! 1\n", "YQ== 0\nYQ== 1\n", "YQ== 0\nYg== 0\n", "YWI= 0\n"}) {
        auto v = tk::vocab_from_tiktoken(model, "");
        ASSERT_FALSE(v) << model;
        EXPECT_NE(v.error().message.find("tiktoken.model"), std::string::npos) << v.error().message;
    }
    auto bad_config = tk::vocab_from_tiktoken("YQ== 0\n", R"({"added_tokens_decoder": {"x": {}}})");
    ASSERT_FALSE(bad_config);
    EXPECT_NE(bad_config.error().message.find("added_tokens_decoder"), std::string::npos);
}

} // namespace
