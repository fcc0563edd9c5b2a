// The reader on real GGUF files: every vocabulary fixture in the shared folder parses and re-encodes exactly.
#include "runtime/gguf/encode.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/summary.hpp"
#include "tests/gguf/test_util.hpp"

#include <gtest/gtest.h>

namespace sluice::gguf {
namespace {

std::vector<std::filesystem::path> vocab_files() {
    std::vector<std::filesystem::path> out;
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab")) {
        if (e.path().extension() == ".gguf") {
            out.push_back(e.path());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

TEST(gguf_vocab_fixtures, every_fixture_parses_with_a_token_list) {
    const auto files = vocab_files();
    ASSERT_GE(files.size(), 6U);
    for (const auto& path : files) {
        SCOPED_TRACE(path.string());
        auto m = model_files::open(path);
        ASSERT_TRUE(m) << m.error().message;
        auto tokens = m->kv().get_array_of_strings(keys::tokenizer_tokens);
        ASSERT_TRUE(tokens) << tokens.error().message;
        EXPECT_GT(tokens->size(), 1000U);
        auto tok = summarize_tokenizer(m->kv());
        ASSERT_TRUE(tok) << tok.error().message;
        EXPECT_TRUE(tok->model == "gpt2" || tok->model == "llama") << tok->model;
        EXPECT_EQ(tok->n_tokens, tokens->size());
        if (tok->model == "gpt2") {
            EXPECT_GT(tok->n_merges, 0U);
        }
        EXPECT_TRUE(m->architecture());
    }
}

TEST(gguf_vocab_fixtures, reencoding_the_metadata_gives_the_same_header_bytes) {
    for (const auto& path : vocab_files()) {
        SCOPED_TRACE(path.string());
        auto m = model_files::open(path);
        ASSERT_TRUE(m) << m.error().message;
        const auto& h = m->parts()[0].header;
        if (!h.tensors.empty() || h.version != 3) {
            continue;
        }
        const auto file = testing::read_file(path);
        auto encoded = encode_header(h.kv, {}, h.alignment);
        encoded.resize(std::min(encoded.size(), file.size()));
        ASSERT_EQ(encoded.size(), std::min(file.size(), encoded.size()));
        EXPECT_TRUE(std::equal(encoded.begin(), encoded.end(), file.begin()));
    }
}

} // namespace
} // namespace sluice::gguf
