// MXFP4 against the OCP microscaling definition: E2M1 values times a power-of-two E8M0 scale, at every ISA level,
// including the scale bytes at the ends of the range.
#include "kernels/cpu/blocks.hpp"
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace sluice::kernels {
namespace {

// The positive E2M1 values (sign bit clear), by 3-bit code.
constexpr float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// One block whose value j has code j % 16: value j in the low nibble of byte j, value j + 16 in the high one.
block_mxfp4 every_code_block(std::uint8_t e) {
    block_mxfp4 b{};
    b.e = e;
    for (int j = 0; j < 16; ++j) {
        b.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
    }
    return b;
}

float code_value(int code, int exponent) {
    const float v = std::ldexp(e2m1[code & 7], exponent);
    return (code & 8) ? -v : v;
}

TEST(mxfp4, dequantize_gives_e2m1_values_times_two_to_the_scale_exponent) {
    for (isa_level isa : supported_isas()) {
        for (int e : {100, 120, 126, 127, 128, 140, 200}) {
            const block_mxfp4 b = every_code_block(static_cast<std::uint8_t>(e));
            float out[32];
            dequantize_row(quant_type::mxfp4, &b, out, 32, isa);
            for (int j = 0; j < 16; ++j) {
                ASSERT_EQ(out[j], code_value(j, e - 127)) << isa_name(isa) << " e " << e << " j " << j;
                ASSERT_EQ(out[j + 16], code_value(15 - j, e - 127)) << isa_name(isa) << " e " << e << " j " << j;
            }
        }
    }
}

TEST(mxfp4, extreme_scale_bytes_decode_as_ggml_does_without_nan) {
    // E8M0 0 and 1 are the subnormal floats 2^-128 and 2^-127 halved per level; 255 (NaN in the OCP spec) is 2^127
    // as GGML reads it, so 6.0 * 2^128 overflows to infinity and no NaN appears.
    for (isa_level isa : supported_isas()) {
        for (int e : {0, 1, 2, 254, 255}) {
            const block_mxfp4 b = every_code_block(static_cast<std::uint8_t>(e));
            float out[32];
            dequantize_row(quant_type::mxfp4, &b, out, 32, isa);
            for (int j = 0; j < 16; ++j) {
                const float want = static_cast<float>(static_cast<double>(e2m1[j & 7]) * std::ldexp(1.0, e - 127)) *
                                   ((j & 8) ? -1.0f : 1.0f);
                ASSERT_EQ(out[j], want) << isa_name(isa) << " e " << e << " j " << j;
                ASSERT_FALSE(std::isnan(out[j]));
            }
        }
    }
}

TEST(mxfp4, dot_at_extreme_scale_bytes_matches_scalar_at_every_level) {
    // Rows of 16 blocks (the AVX-512 decode kernel forms their scales together, with vscalefps) and of 19 (the last
    // three take the per-pair scalar products); every block of a row has the same scale byte, down to the subnormal
    // E8M0 0 and 1, and the 1-token and 4-token products must agree with the scalar reference.
    std::mt19937 rng(11);
    for (std::size_t blocks : {16, 19}) {
        const std::size_t cols = 32 * blocks;
        const auto x = test::random_floats(rng, 4 * cols);
        for (int e : {0, 1, 2, 100, 127, 128, 200, 230}) {
            std::vector<block_mxfp4> w(blocks);
            for (std::size_t b = 0; b < blocks; ++b) {
                w[b] = every_code_block(static_cast<std::uint8_t>(e));
                w[b].qs[b % 16] = static_cast<std::uint8_t>(rng());
            }
            const auto wf =
                test::reference_dequantize(quant_type::mxfp4, reinterpret_cast<const std::uint8_t*>(w.data()), 1, cols);
            std::vector<float> ref(4);
            std::vector<std::uint8_t> act(prepared_row_bytes(quant_type::mxfp4, cols) * 4);
            for (isa_level isa : supported_isas()) {
                prepare_activations(quant_type::mxfp4, x.data(), cols, 4, cols, act.data(), isa);
                std::vector<float> one(4), four(4);
                for (std::size_t t = 0; t < 4; ++t) {
                    matmul_prepared(quant_type::mxfp4, w.data(), sizeof(block_mxfp4) * blocks, 0, 1, cols,
                                    act.data() + t * act.size() / 4, 1, one.data() + t, 1, isa);
                }
                matmul_prepared(quant_type::mxfp4, w.data(), sizeof(block_mxfp4) * blocks, 0, 1, cols, act.data(), 4,
                                four.data(), 1, isa);
                if (isa == isa_level::scalar) {
                    ref = one;
                }
                for (std::size_t t = 0; t < 4; ++t) {
                    double mag = 0;
                    for (std::size_t i = 0; i < cols; ++i) {
                        mag += std::fabs(static_cast<double>(wf[i]) * x[t * cols + i]);
                    }
                    ASSERT_TRUE(std::isfinite(one[t])) << isa_name(isa) << " e " << e;
                    ASSERT_NEAR(one[t], ref[t], 1e-5 * mag) << isa_name(isa) << " e " << e << " token " << t;
                    ASSERT_EQ(four[t], one[t]) << isa_name(isa) << " e " << e << " token " << t;
                }
            }
        }
    }
}

TEST(mxfp4, quantizer_keeps_representable_blocks_exact) {
    // A block made of E2M1 values times 2^-3 with its largest magnitude 6 * 2^-3 comes back unchanged.
    std::vector<float> x(64);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = code_value(static_cast<int>(i * 7 % 16), -3);
    }
    x[5] = 6.0f / 8;
    x[37] = -6.0f / 8;
    std::vector<std::uint8_t> q(*row_bytes(quant_type::mxfp4, x.size()));
    quantize_row(quant_type::mxfp4, x.data(), q.data(), x.size());
    const auto back = test::reference_dequantize(quant_type::mxfp4, q.data(), 1, x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(back[i], x[i]) << i;
    }
}

TEST(mxfp4, quantizer_takes_non_finite_input_without_undefined_behaviour) {
    std::vector<float> x(32, 1.0f);
    x[3] = std::numeric_limits<float>::infinity();
    x[9] = std::numeric_limits<float>::quiet_NaN();
    block_mxfp4 b{};
    quantize_row(quant_type::mxfp4, x.data(), &b, x.size());
    EXPECT_EQ(b.e, 0); // a block with a non-finite maximum gets the smallest scale instead of a wrapped exponent
}

} // namespace
} // namespace sluice::kernels
