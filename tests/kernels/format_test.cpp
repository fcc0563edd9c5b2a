// Weight formats at every ISA level: SIMD against the scalar reference, dot products against float math,
// and quantize-then-dequantize error within each format's bound.
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace sluice::kernels {
namespace {

using test::all_formats;

// One dot product of weight row `w` with float activations `x` through the public path at `isa`.
float dot_at(isa_level isa, quant_type type, const std::uint8_t* w, const float* x, std::size_t cols) {
    std::vector<std::uint8_t> act(prepared_row_bytes(type, cols));
    prepare_activations(type, x, cols, 1, cols, act.data(), isa);
    float y = 0;
    matmul_prepared(type, w, *row_bytes(type, cols), 0, 1, cols, act.data(), 1, &y, 1, isa);
    return y;
}

TEST(formats, simd_dequantize_matches_scalar) {
    std::mt19937 rng(1);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : all_formats()) {
            for (std::size_t blocks : {1, 2, 3, 7, 16, 33}) {
                const std::size_t cols = test::cols_for(type, blocks);
                const auto w = test::random_weights(rng, type, 2, cols);
                const auto ref = test::reference_dequantize(type, w.data(), 2, cols);
                std::vector<float> got(2 * cols);
                const std::size_t rb = *row_bytes(type, cols);
                for (std::size_t r = 0; r < 2; ++r) {
                    dequantize_row(type, w.data() + r * rb, got.data() + r * cols, cols, isa);
                }
                for (std::size_t i = 0; i < got.size(); ++i) {
                    // SIMD may fuse the scale multiply-add: one rounding of difference allowed.
                    ASSERT_NEAR(got[i], ref[i], 1e-6f * std::max(1.0f, std::fabs(ref[i])))
                        << isa_name(isa) << " " << traits_of(type).name << " cols " << cols << " i " << i;
                }
            }
        }
    }
}

TEST(formats, simd_activation_quantization_is_byte_exact) {
    std::mt19937 rng(2);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : {quant_type::q8_0, quant_type::q4_k}) {
            const std::size_t cols = test::cols_for(type, 5);
            const auto x = test::random_floats(rng, cols);
            std::vector<std::uint8_t> ref(prepared_row_bytes(type, cols)), got(ref.size());
            prepare_activations(type, x.data(), cols, 1, cols, ref.data(), isa_level::scalar);
            prepare_activations(type, x.data(), cols, 1, cols, got.data(), isa);
            EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size()), 0) << isa_name(isa);
        }
    }
}

TEST(formats, simd_dot_matches_scalar_on_random_shapes) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<std::size_t> pick_blocks(1, 64);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : all_formats()) {
            for (int trial = 0; trial < 40; ++trial) {
                const std::size_t cols = test::cols_for(type, trial == 0 ? 1 : pick_blocks(rng));
                const auto w = test::random_weights(rng, type, 1, cols);
                const auto x = test::random_floats(rng, cols);
                const auto wf = test::reference_dequantize(type, w.data(), 1, cols);
                double mag = 0;
                for (std::size_t i = 0; i < cols; ++i) {
                    mag += std::fabs(static_cast<double>(wf[i]) * x[i]);
                }
                // Integer block sums are exact at every level; only the float accumulation order differs.
                const float ref = dot_at(isa_level::scalar, type, w.data(), x.data(), cols);
                const float got = dot_at(isa, type, w.data(), x.data(), cols);
                ASSERT_NEAR(got, ref, 1e-5 * mag + 1e-6)
                    << isa_name(isa) << " " << traits_of(type).name << " cols " << cols;
            }
        }
    }
}

TEST(formats, four_token_kernels_equal_single_token_dots_exactly) {
    // Rows from one block to past several four-block steps with 0..3 trailing blocks, so that the main loop
    // and the tail of each dot4 kernel run; 5, 6 and 7 tokens are one group of four plus one single-token dot, or
    // plus two or three tokens (the dot_few kernel where a format has one).
    std::mt19937 rng(6);
    const std::size_t rows = 3;
    for (isa_level isa : supported_isas()) {
        for (quant_type type : all_formats()) {
            for (std::size_t blocks : {1, 4, 5, 6, 7, 16, 19}) {
                for (std::size_t tokens : {2, 3, 5, 6, 7}) {
                    const std::size_t cols = test::cols_for(type, blocks);
                    const std::size_t rb = *row_bytes(type, cols), stride = prepared_row_bytes(type, cols);
                    const auto w = test::random_weights(rng, type, rows, cols);
                    const auto x = test::random_floats(rng, cols * tokens);
                    std::vector<std::uint8_t> act(stride * tokens);
                    prepare_activations(type, x.data(), cols, tokens, cols, act.data(), isa);
                    std::vector<float> got(rows * tokens), ref(rows * tokens);
                    matmul_prepared(type, w.data(), rb, 0, rows, cols, act.data(), tokens, got.data(), rows, isa);
                    for (std::size_t t = 0; t < tokens; ++t) {
                        matmul_prepared(type, w.data(), rb, 0, rows, cols, act.data() + t * stride, 1,
                                        ref.data() + t * rows, rows, isa);
                    }
                    ASSERT_EQ(std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)), 0)
                        << isa_name(isa) << " " << traits_of(type).name << " cols " << cols << " tokens " << tokens;
                }
            }
        }
    }
}

// Bound of the 8-bit activation rounding: each x_i moves by at most half a step of its block's scale
// (amax / 254), plus the f16 rounding of a Q8_0 block scale (relative 2^-11).
double activation_error_bound(quant_type type, const std::vector<float>& wf, const std::vector<float>& x) {
    const std::size_t blk = test::act_block(type);
    if (blk == 1) {
        return 1e-5;
    }
    double bound = 1e-5;
    for (std::size_t b0 = 0; b0 < x.size(); b0 += blk) {
        float amax = 0;
        for (std::size_t i = b0; i < b0 + blk; ++i) {
            amax = std::max(amax, std::fabs(x[i]));
        }
        for (std::size_t i = b0; i < b0 + blk; ++i) {
            bound += std::fabs(wf[i]) * (amax / 254.0 * 1.001 + std::fabs(x[i]) * 1e-3);
        }
    }
    return bound;
}

TEST(formats, dot_equals_dequantized_float_dot_within_activation_rounding) {
    std::mt19937 rng(4);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : all_formats()) {
            const std::size_t cols = test::cols_for(type, 9);
            const auto w = test::random_weights(rng, type, 1, cols);
            const auto x = test::random_floats(rng, cols);
            const auto wf = test::reference_dequantize(type, w.data(), 1, cols);
            double exact = 0;
            for (std::size_t i = 0; i < cols; ++i) {
                exact += static_cast<double>(wf[i]) * x[i];
            }
            const float got = dot_at(isa, type, w.data(), x.data(), cols);
            EXPECT_NEAR(got, exact, activation_error_bound(type, wf, x))
                << isa_name(isa) << " " << traits_of(type).name;
        }
    }
}

struct roundtrip_case {
    quant_type type;
    double max_rel_rms; // RMS error over RMS of N(0,1) data with 1% outliers
};

TEST(formats, quantize_then_dequantize_error_within_format_bound) {
    // Expected bounds: a b-bit uniform quantizer over a block range gives RMS error ~ range / (2^b * sqrt(12)).
    const roundtrip_case cases[] = {
        {quant_type::f32, 0.0},   {quant_type::f16, 5e-4},  {quant_type::bf16, 4e-3}, {quant_type::q8_0, 0.012},
        {quant_type::q6_k, 0.05}, {quant_type::q5_k, 0.08}, {quant_type::q4_k, 0.14}, {quant_type::q4_0, 0.16},
        {quant_type::mxfp4, 0.2}, {quant_type::q3_k, 0.3},  {quant_type::q2_k, 0.45},
    };
    std::mt19937 rng(5);
    for (const auto& c : cases) {
        const std::size_t cols = 256 * 16;
        const auto x = test::random_floats(rng, cols);
        std::vector<std::uint8_t> q(*row_bytes(c.type, cols));
        quantize_row(c.type, x.data(), q.data(), cols);
        const auto back = test::reference_dequantize(c.type, q.data(), 1, cols);
        double err = 0, norm = 0;
        for (std::size_t i = 0; i < cols; ++i) {
            err += (back[i] - x[i]) * static_cast<double>(back[i] - x[i]);
            norm += static_cast<double>(x[i]) * x[i];
        }
        const double rel = std::sqrt(err / norm);
        EXPECT_LE(rel, c.max_rel_rms) << traits_of(c.type).name;
        std::printf("round trip %-5s relative RMS error %.5f\n", std::string(traits_of(c.type).name).c_str(), rel);
    }
}

TEST(formats, quantizers_keep_zero_rows_zero) {
    for (quant_type type : {quant_type::q8_0, quant_type::q4_0, quant_type::q4_k, quant_type::q5_k, quant_type::q6_k,
                            quant_type::mxfp4, quant_type::q2_k, quant_type::q3_k}) {
        std::vector<float> x(512, 0.0f);
        std::vector<std::uint8_t> q(*row_bytes(type, 512));
        quantize_row(type, x.data(), q.data(), 512);
        const auto back = test::reference_dequantize(type, q.data(), 1, 512);
        for (float v : back) {
            ASSERT_EQ(v, 0.0f) << traits_of(type).name;
        }
    }
}

} // namespace
} // namespace sluice::kernels

namespace sluice::kernels {
namespace {

TEST(formats, random_blocks_of_formats_without_a_quantizer_get_the_asked_spread) {
    std::mt19937 rng(8);
    for (std::uint32_t id = 0; id < 64; ++id) {
        const auto t = find_quant_traits(id);
        if (!t || !can_scale_random_blocks(t->type)) {
            continue;
        }
        EXPECT_TRUE(has_kernels(t->type)) << t->name;
        std::vector<std::uint8_t> w(16 * t->block_bytes);
        for (auto& b : w) {
            b = static_cast<std::uint8_t>(rng());
        }
        scale_random_blocks(t->type, w.data(), 16, 0.02f);
        const auto values = test::reference_dequantize(t->type, w.data(), 1, 16 * t->block_elems);
        double sq = 0;
        for (float v : values) {
            ASSERT_TRUE(std::isfinite(v)) << t->name;
            sq += static_cast<double>(v) * v;
        }
        // Each block's RMS is 0.02 up to the f16 rounding of its scale (relative 2^-11).
        EXPECT_NEAR(std::sqrt(sq / static_cast<double>(values.size())), 0.02, 0.02 * 1e-3) << t->name;
    }
}

} // namespace
} // namespace sluice::kernels
