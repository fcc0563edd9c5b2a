// The hybrids' row/column orders and value transforms reproduce what llama.cpp's own converter wrote for the same
// checkpoints (tests/fixtures/reference/<arch>/llamacpp-f16.gguf): every linear-attention tensor and norm, value for
// value after rounding to F16.
#include "kernels/quant.hpp"
#include "runtime/convert/hybrid_layout.hpp"
#include "runtime/convert/safetensors.hpp"
#include "runtime/gguf/model_files.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

using namespace sluice;
using namespace sluice::convert;

const std::filesystem::path reference_dir =
    std::filesystem::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";

/// The fixture's checkpoint and llama.cpp's conversion of it.
struct fixture {
    checkpoint ckpt;
    gguf::model_files gguf;
    std::string bytes; ///< the whole GGUF file

    static fixture open(const std::string& name) {
        auto c = checkpoint::open(reference_dir / name);
        auto g = gguf::model_files::open(reference_dir / name / "llamacpp-f16.gguf");
        EXPECT_TRUE(c && g);
        std::ifstream in(reference_dir / name / "llamacpp-f16.gguf", std::ios::binary);
        return {std::move(*c), std::move(*g), std::string(std::istreambuf_iterator<char>(in), {})};
    }

    /// All rows of HF tensor `name`, through `spans` (all rows when empty).
    std::vector<float> hf(const std::string& name, const std::vector<row_span>& spans = {}) {
        const auto* t = ckpt.find(name);
        EXPECT_NE(t, nullptr) << name;
        std::vector<float> out;
        const auto read = [&](std::uint64_t first, std::uint64_t n) {
            const std::size_t at = out.size();
            out.resize(at + n * t->row_elems());
            EXPECT_TRUE(ckpt.read_rows(*t, first, n, out.data() + at));
        };
        if (spans.empty()) {
            read(0, t->rows());
        }
        for (const auto& s : spans) {
            read(s.first, s.n);
        }
        return out;
    }

    /// GGUF tensor `name` as floats.
    std::vector<float> gg(const std::string& name) {
        const auto* t = gguf.find_tensor(name);
        EXPECT_NE(t, nullptr) << name;
        const std::uint64_t rows = t->n_elements / t->ne[0];
        std::vector<float> out(t->n_elements);
        for (std::uint64_t r = 0; r < rows; ++r) {
            kernels::dequantize_row(t->type, bytes.data() + t->offset + r * t->row_bytes(), out.data() + r * t->ne[0],
                                    t->ne[0]);
        }
        return out;
    }
};

/// Equal after both are rounded to F16 (llama.cpp stores matrices as F16 and vectors as F32).
void expect_same(const std::vector<float>& ours, const std::vector<float>& theirs, const std::string& what) {
    ASSERT_EQ(ours.size(), theirs.size()) << what;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        std::uint16_t h = 0;
        kernels::quantize_row(kernels::quant_type::f16, &ours[i], &h, 1);
        float rounded = 0;
        kernels::dequantize_row(kernels::quant_type::f16, &h, &rounded, 1);
        ASSERT_TRUE(theirs[i] == ours[i] || theirs[i] == rounded)
            << what << " at " << i << ": " << ours[i] << " vs " << theirs[i];
    }
}

TEST(hybrid_layout, tiled_orders_are_the_grouped_heads_interleaved) {
    const value_heads v{2, 3, 1};
    EXPECT_EQ(tiled_value_columns(v), (std::vector<std::uint64_t>{0, 3, 1, 4, 2, 5}));
    const auto rows = tiled_value_rows({2, 2, 4}, 10);
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[0].n, 10u);
    EXPECT_EQ(rows[1].first, 10u);
    EXPECT_EQ(rows[2].first, 18u); // tiled head 1 = key head 1's first value head = grouped head 2
    EXPECT_EQ(rows[3].first, 14u);
    EXPECT_EQ(rows[4].first, 22u);
}

TEST(hybrid_layout, qwen35_layers_match_llamacpp_conversion) {
    for (const char* name : {"qwen35moe", "qwen35"}) {
        auto f = fixture::open(name);
        const value_heads heads{2, 2, 16}, scalars{2, 2, 1};
        for (int il : {0, 2}) { // the linear-attention layers
            const std::string hf = "model.layers." + std::to_string(il) + ".", blk = "blk." + std::to_string(il) + ".";
            const std::string la = hf + "linear_attn.";
            expect_same(f.hf(la + "in_proj_qkv.weight", tiled_value_rows(heads, 64)), f.gg(blk + "attn_qkv.weight"),
                        blk + "attn_qkv");
            expect_same(f.hf(la + "in_proj_z.weight", tiled_value_rows(heads, 0)), f.gg(blk + "attn_gate.weight"),
                        blk + "attn_gate");
            expect_same(f.hf(la + "in_proj_a.weight", tiled_value_rows(scalars, 0)), f.gg(blk + "ssm_alpha.weight"),
                        blk + "ssm_alpha");
            expect_same(f.hf(la + "in_proj_b.weight", tiled_value_rows(scalars, 0)), f.gg(blk + "ssm_beta.weight"),
                        blk + "ssm_beta");
            expect_same(f.hf(la + "conv1d.weight", tiled_value_rows(heads, 64)), f.gg(blk + "ssm_conv1d.weight"),
                        blk + "ssm_conv1d");
            auto dt = f.hf(la + "dt_bias");
            permute_columns(dt.data(), 1, dt.size(), tiled_value_columns(scalars));
            expect_same(dt, f.gg(blk + "ssm_dt.bias"), blk + "ssm_dt");
            auto a = f.hf(la + "A_log");
            permute_columns(a.data(), 1, a.size(), tiled_value_columns(scalars));
            apply_value_transform(value_transform::neg_exp, a.data(), a.size());
            expect_same(a, f.gg(blk + "ssm_a"), blk + "ssm_a");
            auto out = f.hf(la + "out_proj.weight");
            permute_columns(out.data(), 64, 64, tiled_value_columns(heads));
            expect_same(out, f.gg(blk + "ssm_out.weight"), blk + "ssm_out");
            expect_same(f.hf(la + "norm.weight"), f.gg(blk + "ssm_norm.weight"), blk + "ssm_norm (stored as is)");
            auto norm = f.hf(hf + "input_layernorm.weight");
            apply_value_transform(value_transform::add_one, norm.data(), norm.size());
            expect_same(norm, f.gg(blk + "attn_norm.weight"), blk + "attn_norm (1 + w)");
        }
        auto qn = f.hf("model.layers.1.self_attn.q_norm.weight");
        apply_value_transform(value_transform::add_one, qn.data(), qn.size());
        expect_same(qn, f.gg("blk.1.attn_q_norm.weight"), "blk.1.attn_q_norm (1 + w)");
        expect_same(f.hf("model.layers.1.self_attn.q_proj.weight"), f.gg("blk.1.attn_q.weight"),
                    "blk.1.attn_q (query and gate interleaved per head, unpermuted)");
        auto enorm = f.hf("mtp.pre_fc_norm_embedding.weight");
        apply_value_transform(value_transform::add_one, enorm.data(), enorm.size());
        expect_same(enorm, f.gg("blk.4.nextn.enorm.weight"), "nextn.enorm (1 + w)");
    }
}

TEST(hybrid_layout, qwen3next_fused_projection_splits_like_llamacpp) {
    auto f = fixture::open("qwen3next");
    const std::string la = "model.layers.0.linear_attn.";
    expect_same(f.hf(la + "in_proj_qkvz.weight", qwen3next_qkv_rows(2, 16, 2)), f.gg("blk.0.attn_qkv.weight"),
                "attn_qkv");
    expect_same(f.hf(la + "in_proj_qkvz.weight", qwen3next_gate_rows(2, 16, 2)), f.gg("blk.0.attn_gate.weight"),
                "attn_gate");
    expect_same(f.hf(la + "in_proj_ba.weight"), f.gg("blk.0.ssm_ba.weight"), "ssm_ba (kept fused)");
    expect_same(f.hf(la + "conv1d.weight"), f.gg("blk.0.ssm_conv1d.weight"), "ssm_conv1d (grouped order)");
    expect_same(f.hf(la + "out_proj.weight"), f.gg("blk.0.ssm_out.weight"), "ssm_out (grouped order)");
}

} // namespace
