// The q4_k_x16 layout: repacking is lossless, and products over repacked weights (dense and MoE experts, any row
// range and token count) equal the scalar reference bit for bit at AVX-512, where the rows layout does too.
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "kernels/repack.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

namespace sluice::kernels {
namespace {

constexpr quant_type q4k = quant_type::q4_k;

bool has_avx512() {
    return detect_isa() == isa_level::avx512;
}

std::vector<std::uint8_t> prepared(std::mt19937& rng, std::size_t cols, std::size_t tokens) {
    const auto x = test::random_floats(rng, cols * tokens);
    std::vector<std::uint8_t> act(prepared_row_bytes(q4k, cols) * tokens);
    prepare_activations(q4k, x.data(), cols, tokens, cols, act.data(), isa_level::scalar);
    return act;
}

// y[t * rows + r] over the rows layout, one row range at `isa`.
std::vector<float> rows_product(const std::vector<std::uint8_t>& w, std::size_t rows, std::size_t cols,
                                const std::vector<std::uint8_t>& act, std::size_t tokens, std::size_t r0,
                                std::size_t r1, isa_level isa) {
    std::vector<float> y(rows * tokens, -1.0f);
    matmul_prepared(q4k, w.data(), *row_bytes(q4k, cols), r0, r1, cols, act.data(), tokens, y.data(), rows, isa);
    return y;
}

TEST(repack, q4_k_x16_round_trip_restores_every_byte) {
    std::mt19937 rng(1);
    for (std::size_t blocks : {1, 2, 3, 8}) {
        const std::size_t rows = 48, cols = blocks * 256;
        const auto original = test::random_weights(rng, q4k, rows, cols);
        auto w = original;
        repack_rows(weight_layout::q4_k_x16, w.data(), rows, cols);
        EXPECT_NE(w, original) << "blocks " << blocks;
        unpack_rows(weight_layout::q4_k_x16, w.data(), rows, cols);
        EXPECT_EQ(w, original) << "blocks " << blocks;
    }
}

TEST(repack, layout_is_chosen_for_q4_k_with_whole_groups_at_avx512_only) {
    EXPECT_EQ(preferred_layout(q4k, 48, isa_level::avx2), weight_layout::rows);
    EXPECT_EQ(preferred_layout(q4k, 40, isa_level::avx512), weight_layout::rows);
    EXPECT_EQ(preferred_layout(quant_type::q6_k, 48, isa_level::avx512), weight_layout::rows);
    EXPECT_EQ(preferred_layout(q4k, 48, isa_level::avx512),
              has_avx512() ? weight_layout::q4_k_x16 : weight_layout::rows);
}

TEST(repack, q4_k_rows_layout_at_avx512_equals_the_scalar_reference_bit_for_bit) {
    if (!has_avx512()) {
        GTEST_SKIP() << "no AVX-512 on this machine";
    }
    std::mt19937 rng(2);
    for (std::size_t blocks : {1, 2, 3, 8}) {
        for (std::size_t tokens : {1, 3, 4, 9}) {
            const std::size_t rows = 21, cols = blocks * 256;
            const auto w = test::random_weights(rng, q4k, rows, cols);
            const auto act = prepared(rng, cols, tokens);
            const auto ref = rows_product(w, rows, cols, act, tokens, 0, rows, isa_level::scalar);
            const auto got = rows_product(w, rows, cols, act, tokens, 0, rows, isa_level::avx512);
            ASSERT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0)
                << "blocks " << blocks << " tokens " << tokens;
        }
    }
}

TEST(repack, q4_k_x16_products_equal_the_rows_layout_for_any_range_and_token_count) {
    std::mt19937 rng(3);
    const std::pair<std::size_t, std::size_t> ranges[] = {{0, 48}, {5, 37}, {3, 9}, {16, 32}, {0, 17}, {31, 48}};
    for (isa_level isa : supported_isas()) {
        // At AVX-512 both layouts give the scalar reference's result; below it the repacked path runs the level's
        // own dot kernel on unpacked rows, so it equals the rows layout at that level.
        const isa_level ref_isa = isa == isa_level::avx512 ? isa_level::scalar : isa;
        for (std::size_t blocks : {1, 3, 8}) {
            for (std::size_t tokens : {1, 2, 3, 4, 5, 9, 37}) {
                const std::size_t rows = 48, cols = blocks * 256;
                const auto w = test::random_weights(rng, q4k, rows, cols);
                auto packed = w;
                repack_rows(weight_layout::q4_k_x16, packed.data(), rows, cols);
                const auto act = prepared(rng, cols, tokens);
                for (const auto& [r0, r1] : ranges) {
                    const auto ref = rows_product(w, rows, cols, act, tokens, r0, r1, ref_isa);
                    std::vector<float> y(rows * tokens, -1.0f);
                    matmul_prepared(q4k, weight_layout::q4_k_x16, packed.data(), *row_bytes(q4k, cols), r0, r1, cols,
                                    act.data(), tokens, y.data(), rows, isa);
                    ASSERT_EQ(std::memcmp(y.data(), ref.data(), ref.size() * sizeof(float)), 0)
                        << isa_name(isa) << " blocks " << blocks << " tokens " << tokens << " rows " << r0 << ".."
                        << r1;
                }
            }
        }
    }
}

TEST(repack, q4_k_x16_expert_products_equal_the_rows_layout) {
    std::mt19937 rng(4);
    const std::size_t n_expert = 5, rows = 32, cols = 512, tokens = 11, used = 3;
    for (isa_level isa : supported_isas()) {
        std::vector<std::vector<std::uint8_t>> plain, packed;
        std::vector<const void*> plain_ptrs, packed_ptrs;
        for (std::size_t e = 0; e < n_expert; ++e) {
            plain.push_back(test::random_weights(rng, q4k, rows, cols));
            packed.push_back(plain.back());
            repack_rows(weight_layout::q4_k_x16, packed.back().data(), rows, cols);
        }
        for (std::size_t e = 0; e < n_expert; ++e) {
            plain_ptrs.push_back(plain[e].data());
            packed_ptrs.push_back(packed[e].data());
        }
        const auto act = prepared(rng, cols, tokens);
        // Each token picks `used` experts; expert 0 gets most picks so that it has more than four tokens.
        std::vector<std::int32_t> sel_expert, sel_token;
        for (std::size_t t = 0; t < tokens; ++t) {
            for (std::size_t k = 0; k < used; ++k) {
                sel_expert.push_back(static_cast<std::int32_t>(k == 0 ? 0 : 1 + rng() % (n_expert - 1)));
                sel_token.push_back(static_cast<std::int32_t>(t));
            }
        }
        const std::size_t n_sel = sel_expert.size();
        const isa_level ref_isa = isa == isa_level::avx512 ? isa_level::scalar : isa;
        for (const auto& [r0, r1] : {std::pair<std::size_t, std::size_t>{0, rows}, {0, 9}, {9, rows}}) {
            std::vector<float> ref(n_sel * rows, -1.0f), got(n_sel * rows, -1.0f);
            matmul_experts(q4k, plain_ptrs.data(), *row_bytes(q4k, cols), r0, r1, cols, act.data(), sel_expert.data(),
                           sel_token.data(), n_sel, ref.data(), rows, nullptr, ref_isa);
            matmul_experts(q4k, weight_layout::q4_k_x16, packed_ptrs.data(), *row_bytes(q4k, cols), r0, r1, cols,
                           act.data(), sel_expert.data(), sel_token.data(), n_sel, got.data(), rows, nullptr, isa);
            ASSERT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0)
                << isa_name(isa) << " rows " << r0 << ".." << r1;
        }
    }
}

TEST(repack, q4_k_x16_with_non_finite_scales_gives_non_finite_rows_without_crashing) {
    std::mt19937 rng(5);
    const std::size_t rows = 16, cols = 512, tokens = 2;
    auto w = test::random_weights(rng, q4k, rows, cols);
    const std::uint16_t nan_half = 0x7e00, inf_half = 0x7c00;
    std::memcpy(w.data() + 3 * *row_bytes(q4k, cols), &nan_half, 2);           // row 3, block 0: d = NaN
    std::memcpy(w.data() + 7 * *row_bytes(q4k, cols) + 144 + 2, &inf_half, 2); // row 7, block 1: dmin = Inf
    repack_rows(weight_layout::q4_k_x16, w.data(), rows, cols);
    const auto act = prepared(rng, cols, tokens);
    for (isa_level isa : supported_isas()) {
        std::vector<float> y(rows * tokens);
        matmul_prepared(q4k, weight_layout::q4_k_x16, w.data(), *row_bytes(q4k, cols), 0, rows, cols, act.data(),
                        tokens, y.data(), rows, isa);
        for (std::size_t t = 0; t < tokens; ++t) {
            EXPECT_TRUE(std::isnan(y[t * rows + 3])) << isa_name(isa);
            EXPECT_FALSE(std::isfinite(y[t * rows + 7])) << isa_name(isa);
            EXPECT_TRUE(std::isfinite(y[t * rows + 0])) << isa_name(isa);
        }
    }
}

} // namespace
} // namespace sluice::kernels
