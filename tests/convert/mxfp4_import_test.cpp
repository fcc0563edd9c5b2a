// gpt-oss's MXFP4 tensors: the repacked GGUF blocks dequantize to exactly the values transformers reads from the
// Hugging Face layout, shapes are checked naming the tensor, and U8 rows are read as bytes from the fixture.
#include "kernels/quant.hpp"
#include "runtime/convert/mxfp4_import.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

namespace sluice::convert {
namespace {

namespace fs = std::filesystem;

/// transformers' FP4_VALUES table (convert_moe_packed_tensors).
constexpr float fp4_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

TEST(mxfp4_import, repacked_blocks_dequantize_to_the_values_transformers_reads) {
    std::mt19937 rng(7);
    const std::size_t n_blocks = 5;
    std::vector<std::uint8_t> blocks(n_blocks * hf_mxfp4_block_bytes), scales(n_blocks);
    for (auto& b : blocks) {
        b = static_cast<std::uint8_t>(rng());
    }
    // Ordinary exponents, and the extremes GGML decodes as subnormal or huge powers of two.
    const std::uint8_t chosen[n_blocks] = {127, 120, 133, 1, 200};
    std::copy(std::begin(chosen), std::end(chosen), scales.begin());
    std::vector<std::uint8_t> packed(n_blocks * gguf_mxfp4_block_bytes);
    repack_mxfp4_row(blocks.data(), scales.data(), n_blocks, packed.data());
    std::vector<float> got(n_blocks * 32);
    kernels::dequantize_row(kernels::quant_type::mxfp4, packed.data(), got.data(), got.size());
    for (std::size_t b = 0; b < n_blocks; ++b) {
        for (std::size_t i = 0; i < 32; ++i) {
            // Hugging Face: value 2k in the low nibble of byte k, 2k+1 in the high one; times 2^(scale - 127).
            const std::uint8_t byte = blocks[b * 16 + i / 2];
            const int code = i % 2 == 0 ? byte & 0x0F : byte >> 4;
            const float want = std::ldexp(fp4_values[code], int(scales[b]) - 127);
            EXPECT_EQ(got[b * 32 + i], want) << "block " << b << " value " << i;
        }
    }
}

st_tensor tensor(std::string name, std::string dtype, std::vector<std::uint64_t> shape) {
    st_tensor t;
    t.name = std::move(name);
    t.dtype = dtype == "U8" ? st_dtype::u8 : dtype == "BF16" ? st_dtype::bf16 : st_dtype::other;
    t.dtype_name = std::move(dtype);
    t.shape = std::move(shape);
    return t;
}

TEST(mxfp4_import, block_and_scale_shapes_are_checked_naming_the_tensor) {
    const auto blocks = tensor("model.layers.0.mlp.experts.down_proj_blocks", "U8", {8, 64, 3, 16});
    const auto scales = tensor("model.layers.0.mlp.experts.down_proj_scales", "U8", {8, 64, 3});
    EXPECT_TRUE(check_mxfp4_pair(blocks, scales, 8, 64, 96));
    struct bad_case {
        st_tensor blocks, scales;
        std::uint64_t experts, rows, cols;
        std::string names;
    };
    const bad_case cases[] = {
        {blocks, scales, 8, 64, 100, "down_proj_blocks"}, // row length not a multiple of 32
        {blocks, scales, 4, 64, 96, "down_proj_blocks"},  // expert count
        {blocks, scales, 8, 64, 128, "down_proj_blocks"}, // block count per row
        {tensor(blocks.name, "U8", {8, 64, 3, 17}), scales, 8, 64, 96, "[8, 64, 3, 17]"},
        {tensor(blocks.name, "BF16", {8, 64, 3, 16}), scales, 8, 64, 96, "BF16"},
        {blocks, tensor(scales.name, "U8", {8, 64, 2}), 8, 64, 96, "down_proj_scales"},
        {blocks, tensor(scales.name, "I8", {8, 64, 3}), 8, 64, 96, "I8"},
    };
    for (const auto& c : cases) {
        auto r = check_mxfp4_pair(c.blocks, c.scales, c.experts, c.rows, c.cols);
        ASSERT_FALSE(r) << c.names;
        EXPECT_NE(r.error().message.find(c.names), std::string::npos) << r.error().message;
    }
}

TEST(mxfp4_import, fixture_blocks_read_as_bytes_and_floats_are_refused) {
    const auto dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference" / "gpt_oss";
    auto ckpt = checkpoint::open(dir);
    ASSERT_TRUE(ckpt) << ckpt.error().message;
    const auto* blocks = ckpt->find("model.layers.0.mlp.experts.gate_up_proj_blocks");
    const auto* scales = ckpt->find("model.layers.0.mlp.experts.gate_up_proj_scales");
    const auto* bias = ckpt->find("model.layers.0.mlp.experts.gate_up_proj_bias");
    ASSERT_TRUE(blocks && scales && bias);
    EXPECT_TRUE(check_mxfp4_pair(*blocks, *scales, 8, 192, 64));
    std::vector<std::uint8_t> s(scales->rows() * scales->row_elems());
    ASSERT_TRUE(ckpt->read_bytes(*scales, 0, scales->rows(), s.data()));
    // The fixture's scales are 2^(floor(log2 max) - 2) of N(0, 3/8) weights: bytes near 127 - 4.
    for (const auto e : s) {
        EXPECT_GE(e, 115);
        EXPECT_LE(e, 127);
    }
    std::vector<float> f(blocks->row_elems());
    auto as_floats = ckpt->read_rows(*blocks, 0, 1, f.data());
    ASSERT_FALSE(as_floats);
    EXPECT_NE(as_floats.error().message.find("U8"), std::string::npos) << as_floats.error().message;
    std::vector<std::uint8_t> b(bias->row_elems() * 2);
    auto as_bytes = ckpt->read_bytes(*bias, 0, 1, b.data());
    ASSERT_FALSE(as_bytes);
    EXPECT_NE(as_bytes.error().message.find("gate_up_proj_bias"), std::string::npos) << as_bytes.error().message;
}

} // namespace
} // namespace sluice::convert
