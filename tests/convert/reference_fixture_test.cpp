// The reference-fidelity checkpoints of tests/fixtures/reference (written by transformers itself) convert to
// GGUF files whose tensor table and metadata are what the architecture expects, with the shared tokenizer.
#include "runtime/convert/converter.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/convert/gguf_values.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace {

namespace fs = std::filesystem;
using namespace sluice;

const fs::path reference_dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";

boost::json::object read_json(const fs::path& p) {
    std::ifstream in(p);
    return boost::json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
}

class reference_checkpoint : public testing::TestWithParam<const char*> {};

TEST_P(reference_checkpoint, converts_to_the_architecture_table_with_config_metadata) {
    const fs::path src = reference_dir / GetParam();
    if (!fs::exists(src / "model.safetensors")) {
        GTEST_SKIP() << "no fixture " << src;
    }
    // The checkpoint folder as published: weights, config and the shared tokenizer files side by side.
    const auto dir = test::scratch_dir() / "convert_reference" / GetParam();
    fs::remove_all(dir);
    fs::create_directories(dir / "hf");
    for (const char* f : {"config.json", "model.safetensors"}) {
        fs::create_symlink(src / f, dir / "hf" / f);
    }
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
        fs::create_symlink(reference_dir / "tokenizer" / f, dir / "hf" / f);
    }
    const auto out = dir / "model.gguf";
    auto summary = convert::convert_checkpoint(dir / "hf", out, {.type = convert::output_type::f32});
    ASSERT_TRUE(summary) << summary.error().message;

    const auto ref = read_json(src / "reference.json");
    const auto cfg = read_json(src / "config.json");
    auto model = gguf::model_files::open(out);
    ASSERT_TRUE(model) << model.error().message;
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(model->kv(), arch);
    ASSERT_TRUE(hp) << hp.error().message;
    EXPECT_EQ(hp->arch, ref.at("gguf_arch").as_string());
    EXPECT_EQ(hp->n_vocab, 2048u);
    EXPECT_EQ(hp->n_embd, 64u);
    EXPECT_EQ(hp->n_layer, 2u);
    EXPECT_EQ(hp->head_dim, 16u);
    EXPECT_FLOAT_EQ(hp->rope.freq_base, static_cast<float>(cfg.at("rope_theta").to_number<double>()));
    EXPECT_FLOAT_EQ(hp->rms_eps, static_cast<float>(cfg.at("rms_norm_eps").to_number<double>()));
    if (const auto* norm = cfg.if_contains("norm_topk_prob"); norm && norm->is_bool()) {
        EXPECT_EQ(hp->expert_weights_norm, norm->as_bool());
    }
    std::size_t expected = 0;
    for (const auto& spec : arch->tensors(*hp)) {
        const auto* t = model->find_tensor(spec.name);
        if (spec.optional && t == nullptr) {
            EXPECT_TRUE(cfg.at("tie_word_embeddings").as_bool()) << spec.name;
            continue;
        }
        ++expected;
        ASSERT_NE(t, nullptr) << spec.name;
        for (std::size_t d = 0; d < spec.ne.size(); ++d) {
            EXPECT_EQ(t->ne[d], spec.ne[d]) << spec.name;
        }
    }
    EXPECT_EQ(model->tensors().size(), expected);

    // The tokenizer from the GGUF matches the one from tokenizer.json, special ids included.
    auto from_json = tokenizer::load_tokenizer(dir / "hf" / "tokenizer.json");
    auto from_gguf = tokenizer::load_tokenizer(out);
    ASSERT_TRUE(from_json) << from_json.error().message;
    ASSERT_TRUE(from_gguf) << from_gguf.error().message;
    EXPECT_EQ(from_gguf->size(), 2048u);
    for (const char* text : {"def main():\n    return 0\n", "<|im_start|>user\nhello<|im_end|>", "  ünïcödé  "}) {
        EXPECT_EQ(from_gguf->encode(text), from_json->encode(text)) << text;
    }
    EXPECT_EQ(*model->kv().get_u32("tokenizer.ggml.eos_token_id"), 1999u);
    EXPECT_EQ(*model->kv().get_u32("tokenizer.ggml.bos_token_id"), 1997u); // from config.json's bos_token_id
}

INSTANTIATE_TEST_SUITE_P(convert, reference_checkpoint,
                         testing::Values("llama", "mixtral", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe"));

} // namespace
