// The write_gguf example produces a qwen3moe-shaped model that the reader accepts with the expected layout.
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/summary.hpp"
#include "tests/gguf/test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace sluice::gguf {
namespace {

TEST(gguf_example, write_gguf_makes_a_readable_qwen3moe_model) {
    testing::scratch_dir dir;
    const auto out = dir / "demo.gguf";
    const std::string cmd = std::string(SLUICE_BINARY_DIR) + "/examples/write_gguf " + out.string() + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto m = model_files::open(out);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(*m->architecture(), "qwen3moe");
    EXPECT_EQ(*m->kv().get_u32(m->arch_key("block_count")), 2U);
    EXPECT_EQ(*m->kv().get_u32(m->arch_key("expert_count")), 8U);
    EXPECT_FLOAT_EQ(*m->kv().get_f32(m->arch_key("rope.freq_base")), 1e6F);
    auto tok = summarize_tokenizer(m->kv());
    ASSERT_TRUE(tok) << tok.error().message;
    EXPECT_EQ(tok->model, "gpt2");
    EXPECT_GT(tok->n_tokens, 256U);
    EXPECT_GT(tok->n_merges, 10U);
    EXPECT_TRUE(tok->bos_id && tok->eos_id && tok->has_chat_template);
    const auto totals = summarize_tensors(*m);
    EXPECT_EQ(totals.expert_tensors, 6U);
    EXPECT_EQ(totals.max_experts, 8U);
    EXPECT_EQ(totals.dense_tensors + totals.expert_tensors, m->tensors().size());
    const auto* down = m->find_tensor("blk.1.ffn_down_exps.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->expert_stride(), 128U * (64 / 32 * 34));
}

} // namespace
} // namespace sluice::gguf
