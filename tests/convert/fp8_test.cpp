// DeepSeek-V3's FP8 format: E4M3 decoding, and the deepseek_v3_fp8 fixture (float8 weights with 32x32 block
// scales, written by torch) read back through the checkpoint reader equal to the float fixture's weights within
// E4M3 rounding, at any row offset; malformed scale tensors are errors naming the tensor.
#include "runtime/convert/fp8.hpp"
#include "runtime/convert/safetensors.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace {

namespace fs = std::filesystem;
using namespace sluice;

const fs::path reference_dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";

TEST(fp8, e4m3_decodes_normals_subnormals_signs_and_nan) {
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x00), 0.0f);
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x38), 1.0f); // exponent 7, mantissa 0
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x3C), 1.5f);
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x7E), 448.0f); // the largest finite value
    EXPECT_EQ(convert::fp8_e4m3_to_float(0xFE), -448.0f);
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x08), std::ldexp(1.0f, -6)); // smallest normal
    EXPECT_TRUE(std::signbit(convert::fp8_e4m3_to_float(0x80)));
    EXPECT_TRUE(std::isnan(convert::fp8_e4m3_to_float(0x7F)));
    EXPECT_TRUE(std::isnan(convert::fp8_e4m3_to_float(0xFF)));
    EXPECT_FALSE(std::isnan(convert::fp8_e4m3_to_float(0x77))); // E4M3 "fn": exponent 15 is not reserved
    EXPECT_EQ(convert::fp8_e4m3_to_float(0x77), 240.0f);
}

TEST(fp8, block_scaled_fixture_reads_back_the_float_weights_within_e4m3_rounding) {
    auto fp8 = convert::checkpoint::open(reference_dir / "deepseek_v3_fp8");
    auto f32 = convert::checkpoint::open(reference_dir / "deepseek_v3");
    ASSERT_TRUE(fp8) << fp8.error().message;
    ASSERT_TRUE(f32) << f32.error().message;
    ASSERT_TRUE(fp8->attach_block_scales(32, 32));
    EXPECT_EQ(fp8->find("model.layers.1.self_attn.kv_b_proj.weight_scale_inv"), nullptr); // taken out
    EXPECT_EQ(fp8->block_scales().size(), 72u); // 5 attention projections a layer, 3 dense FFN, 8x3 expert and 3 shared
    std::size_t checked = 0;
    for (const auto& t : fp8->tensors()) {
        if (t.dtype != convert::st_dtype::f8_e4m3) {
            continue;
        }
        const auto* ref = f32->find(t.name);
        ASSERT_NE(ref, nullptr) << t.name;
        const std::uint64_t rows = t.rows(), cols = t.row_elems();
        std::vector<float> got(rows * cols), want(rows * cols);
        ASSERT_TRUE(fp8->read_rows(t, 0, rows, got.data()));
        ASSERT_TRUE(f32->read_rows(*ref, 0, rows, want.data()));
        for (std::uint64_t r = 0; r < rows; ++r) {
            float block_max[8] = {};
            for (std::uint64_t c = 0; c < cols; ++c) {
                block_max[c / 32] = std::max(block_max[c / 32], std::fabs(want[r * cols + c]));
            }
            for (std::uint64_t c = 0; c < cols; ++c) {
                // E4M3 keeps 3 mantissa bits (relative step 1/8, rounding error 1/16); near zero the subnormal
                // step 2^-9 of the block's scale (block max / 448) bounds it instead.
                const float w = want[r * cols + c];
                const float tol = std::fabs(w) / 16 + block_max[c / 32] / 448 * std::ldexp(1.0f, -9) + 1e-7f;
                ASSERT_NEAR(got[r * cols + c], w, tol) << t.name << " [" << r << ", " << c << "]";
            }
        }
        // Rows read from the middle, across a block boundary, equal the same rows of the whole read.
        const std::uint64_t first = std::min<std::uint64_t>(5, rows - 1);
        const std::uint64_t n = std::min<std::uint64_t>(rows - first, 40);
        std::vector<float> part(n * cols);
        ASSERT_TRUE(fp8->read_rows(t, first, n, part.data()));
        for (std::uint64_t i = 0; i < n * cols; ++i) {
            ASSERT_EQ(part[i], got[first * cols + i]) << t.name;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 72u);
}

TEST(fp8, unattached_or_misshapen_scales_are_errors_naming_the_tensor) {
    auto fp8 = convert::checkpoint::open(reference_dir / "deepseek_v3_fp8");
    ASSERT_TRUE(fp8) << fp8.error().message;
    const auto* w = fp8->find("model.layers.1.self_attn.kv_b_proj.weight");
    ASSERT_NE(w, nullptr);
    std::vector<float> row(w->row_elems());
    auto r = fp8->read_rows(*w, 0, 1, row.data());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("F8_E4M3"), std::string::npos) << r.error().message;
    // 16x16 blocks do not match the [4, 1] scales of kv_b_proj's [112, 16].
    auto bad = fp8->attach_block_scales(16, 16);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("weight_scale_inv"), std::string::npos) << bad.error().message;
    EXPECT_NE(bad.error().message.find("expected F32"), std::string::npos) << bad.error().message;
}

} // namespace
