// Half and bfloat16 conversions: round trips, rounding at known points, and SIMD conversion equal to scalar.
#include "kernels/cpu/fp16.hpp"
#include "kernels/quant.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

namespace sluice::kernels {
namespace {

TEST(fp16, every_finite_half_round_trips_through_float) {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = fp16_to_f32(static_cast<std::uint16_t>(h));
        if (std::isnan(f)) {
            continue;
        }
        ASSERT_EQ(f32_to_fp16(f), h) << "half " << h;
    }
}

TEST(fp16, rounding_to_nearest_even_at_known_points) {
    EXPECT_EQ(f32_to_fp16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_fp16(65519.0f), 0x7bff);
    EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);
    EXPECT_EQ(f32_to_fp16(1.0f + 1.0f / 2048), 0x3c00);    // halfway, rounds to even
    EXPECT_EQ(f32_to_fp16(1.0f + 3.0f / 2048), 0x3c02);    // halfway, rounds to even (up)
    EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
    EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -25)), 0x0000); // halfway to zero, rounds to even
    EXPECT_EQ(f32_to_fp16(-2.0f), 0xc000);
    EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(NAN))));
}

TEST(bf16, conversion_rounds_to_nearest_even) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80); // halfway, even stays
    EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82); // halfway, odd rounds up
    EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
}

TEST(fp16, simd_dequantize_of_every_half_equals_scalar) {
    std::vector<std::uint16_t> all(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) {
        all[h] = static_cast<std::uint16_t>(h);
    }
    std::vector<float> ref(65536);
    dequantize_row(quant_type::f16, all.data(), ref.data(), all.size(), isa_level::scalar);
    for (isa_level isa : supported_isas()) {
        std::vector<float> got(65536);
        dequantize_row(quant_type::f16, all.data(), got.data(), all.size(), isa);
        for (std::size_t i = 0; i < all.size(); ++i) {
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(ref[i]))
                << isa_name(isa) << " half " << i;
        }
    }
}

} // namespace
} // namespace sluice::kernels
