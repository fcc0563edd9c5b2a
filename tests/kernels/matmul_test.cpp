// Products: matmul over many tokens and row ranges equals one dot per (row, token) bit for bit, and the
// MoE expert entry point equals dense products of the selected experts.
#include "kernels/isa.hpp"
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>

namespace sluice::kernels {
namespace {

struct problem {
    quant_type type;
    std::size_t rows, cols, tokens;
    std::vector<std::uint8_t> w, act;
    std::size_t rb;
};

problem make_problem(std::mt19937& rng, quant_type type, std::size_t rows, std::size_t blocks, std::size_t tokens,
                     isa_level isa) {
    problem p{type, rows, test::cols_for(type, blocks), tokens, {}, {}, 0};
    p.w = test::random_weights(rng, type, rows, p.cols);
    p.rb = *row_bytes(type, p.cols);
    const auto x = test::random_floats(rng, p.cols * tokens);
    p.act.resize(prepared_row_bytes(type, p.cols) * tokens);
    prepare_activations(type, x.data(), p.cols, tokens, p.cols, p.act.data(), isa);
    return p;
}

// y[t][r] through single-row, single-token calls.
std::vector<float> one_by_one(const problem& p, isa_level isa) {
    std::vector<float> y(p.rows * p.tokens);
    const std::size_t stride = prepared_row_bytes(p.type, p.cols);
    for (std::size_t t = 0; t < p.tokens; ++t) {
        for (std::size_t r = 0; r < p.rows; ++r) {
            matmul_prepared(p.type, p.w.data(), p.rb, r, r + 1, p.cols, p.act.data() + t * stride, 1,
                            y.data() + t * p.rows, p.rows, isa);
        }
    }
    return y;
}

TEST(matmul, batched_rows_and_tokens_equal_single_dots_exactly) {
    std::mt19937 rng(10);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : test::all_formats()) {
            for (auto [rows, tokens] :
                 {std::pair<std::size_t, std::size_t>{1, 1}, {8, 1}, {67, 1}, {7, 3}, {67, 17}, {33, 64}}) {
                const auto p = make_problem(rng, type, rows, 3, tokens, isa);
                const auto ref = one_by_one(p, isa);
                std::vector<float> y(rows * tokens);
                // Two row ranges, as two threads would split them.
                const std::size_t split = rows / 3;
                matmul_prepared(type, p.w.data(), p.rb, 0, split, p.cols, p.act.data(), tokens, y.data(), rows, isa);
                matmul_prepared(type, p.w.data(), p.rb, split, rows, p.cols, p.act.data(), tokens, y.data(), rows, isa);
                ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)), 0)
                    << isa_name(isa) << " " << traits_of(type).name << " rows " << rows << " tokens " << tokens;
            }
        }
    }
}

TEST(matmul, one_token_over_many_rows_equals_each_row_alone_exactly) {
    // Several-row kernels (dot_rows) reduce rows in groups: 1, 15, 16, 17 and 40 rows cut those groups in every
    // way, and 1 to 9 blocks per row run the main loop and each tail.
    std::mt19937 rng(14);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : test::all_formats()) {
            for (std::size_t blocks : {1, 2, 3, 4, 5, 9}) {
                for (std::size_t rows : {1, 15, 16, 17, 40}) {
                    const auto p = make_problem(rng, type, rows, blocks, 1, isa);
                    const auto ref = one_by_one(p, isa);
                    std::vector<float> y(rows);
                    matmul_prepared(type, p.w.data(), p.rb, 0, rows, p.cols, p.act.data(), 1, y.data(), rows, isa);
                    ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)), 0)
                        << isa_name(isa) << " " << traits_of(type).name << " rows " << rows << " blocks " << blocks;
                }
            }
        }
    }
}

TEST(matmul, f16_and_bf16_prefill_over_long_rows_equals_single_dots_exactly) {
    // Long enough rows that the AVX-512 several-row kernel walks more than two column chunks (1024), plus a
    // 64-value remainder, a 16-value remainder and a scalar tail (2600 = 2 * 1024 + 8 * 64 + 2 * 16 + 8).
    std::mt19937 rng(12);
    for (isa_level isa : supported_isas()) {
        for (auto [type, rows, tokens] : {std::tuple{quant_type::f16, std::size_t{19}, std::size_t{9}},
                                          {quant_type::f16, 3, 4},
                                          {quant_type::bf16, 19, 9},
                                          {quant_type::bf16, 3, 4}}) {
            problem p{type, rows, 2600, tokens, {}, {}, 0};
            p.w = test::random_weights(rng, p.type, rows, p.cols);
            p.rb = *row_bytes(p.type, p.cols);
            const auto x = test::random_floats(rng, p.cols * tokens);
            p.act.resize(prepared_row_bytes(p.type, p.cols) * tokens);
            prepare_activations(p.type, x.data(), p.cols, tokens, p.cols, p.act.data(), isa);
            const auto ref = one_by_one(p, isa);
            std::vector<float> y(rows * tokens);
            matmul_prepared(p.type, p.w.data(), p.rb, 0, rows, p.cols, p.act.data(), tokens, y.data(), rows, isa);
            ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)), 0)
                << isa_name(isa) << " " << traits_of(type).name << " rows " << rows << " tokens " << tokens;
        }
    }
}

TEST(matmul, convenience_matmul_equals_prepared_path) {
    std::mt19937 rng(11);
    const quant_type type = quant_type::q4_k;
    const std::size_t rows = 9, cols = 512, tokens = 4;
    const auto w = test::random_weights(rng, type, rows, cols);
    const auto x = test::random_floats(rng, cols * tokens);
    std::vector<float> y(rows * tokens), ref(rows * tokens);
    matmul(type, w.data(), rows, cols, x.data(), tokens, y.data());
    std::vector<std::uint8_t> act(prepared_row_bytes(type, cols) * tokens);
    prepare_activations(type, x.data(), cols, tokens, cols, act.data());
    matmul_prepared(type, w.data(), *row_bytes(type, cols), 0, rows, cols, act.data(), tokens, ref.data(), rows);
    EXPECT_EQ(y, ref);
}

TEST(matmul, q4_k_one_token_over_many_rows_equals_the_scalar_reference_bit_for_bit) {
    // Decode over a row range takes the several-row kernel where a level has one (AVX-512: two rows at a time, and
    // with an odd block count the two rows' last blocks paired); every row must still be the scalar dot exactly,
    // since streamed experts (GGUF rows) and resident ones (repacked, AVX-512 only) must give the same output.
    if (detect_isa() != isa_level::avx512) {
        GTEST_SKIP() << "the bit-identical Q4_K kernels are AVX-512's";
    }
    std::mt19937 rng(13);
    for (isa_level isa : {isa_level::scalar, isa_level::avx512}) {
        for (std::size_t blocks : {1, 2, 3, 5, 8}) {
            for (std::size_t rows : {1, 2, 3, 7, 16}) {
                const auto p = make_problem(rng, quant_type::q4_k, rows, blocks, 1, isa);
                std::vector<float> ref(rows), y(rows);
                for (std::size_t r = 0; r < rows; ++r) {
                    matmul_prepared(p.type, p.w.data(), p.rb, r, r + 1, p.cols, p.act.data(), 1, ref.data(), rows,
                                    isa_level::scalar);
                }
                // From row 0 and from row 1, so that pairs start on both parities.
                matmul_prepared(p.type, p.w.data(), p.rb, 0, rows, p.cols, p.act.data(), 1, y.data(), rows, isa);
                ASSERT_EQ(std::memcmp(y.data(), ref.data(), rows * sizeof(float)), 0)
                    << isa_name(isa) << " blocks " << blocks << " rows " << rows;
                std::fill(y.begin(), y.end(), 0.0f);
                y[0] = ref[0];
                matmul_prepared(p.type, p.w.data(), p.rb, 1, rows, p.cols, p.act.data(), 1, y.data(), rows, isa);
                ASSERT_EQ(std::memcmp(y.data(), ref.data(), rows * sizeof(float)), 0)
                    << isa_name(isa) << " blocks " << blocks << " rows 1.." << rows;
            }
        }
    }
}

TEST(matmul, expert_rows_equal_dense_products_of_selected_experts) {
    std::mt19937 rng(12);
    for (isa_level isa : supported_isas()) {
        for (quant_type type : {quant_type::q4_k, quant_type::q6_k, quant_type::q8_0, quant_type::f16,
                                quant_type::mxfp4, quant_type::q2_k, quant_type::q3_k})
            for (const auto& [n_experts, tokens] :
                 {std::pair<std::size_t, std::size_t>{6, 5}, {3, 16}, {24, 8}, {12, 8}}) {
                // {3, 16}: many tokens per expert, so the grouped (four-token) path runs too; {24, 8} and {12, 8}:
                // a step of eight sequences, whose experts mostly get one to three tokens (the dot_few path).
                const std::size_t rows = 21, k = 3;
                const std::size_t cols = test::cols_for(type, 2);
                std::vector<std::vector<std::uint8_t>> experts; // separate buffers on purpose
                std::vector<const void*> ptrs;
                for (std::size_t e = 0; e < n_experts; ++e) {
                    experts.push_back(test::random_weights(rng, type, rows, cols));
                }
                for (const auto& e : experts) {
                    ptrs.push_back(e.data());
                }
                const auto x = test::random_floats(rng, cols * tokens);
                const std::size_t stride = prepared_row_bytes(type, cols);
                std::vector<std::uint8_t> act(stride * tokens);
                prepare_activations(type, x.data(), cols, tokens, cols, act.data(), isa);
                std::vector<std::int32_t> sel_expert, sel_token;
                std::uniform_int_distribution<int> pick(0, n_experts - 1);
                for (std::size_t t = 0; t < tokens; ++t) {
                    for (std::size_t j = 0; j < k; ++j) {
                        sel_expert.push_back(pick(rng));
                        sel_token.push_back(static_cast<std::int32_t>(t));
                    }
                }
                std::vector<float> y(sel_expert.size() * rows);
                matmul_experts(type, ptrs.data(), *row_bytes(type, cols), 0, rows, cols, act.data(), sel_expert.data(),
                               sel_token.data(), sel_expert.size(), y.data(), rows, nullptr, isa);
                // The same selections with output rows in reverse order land in the reversed rows.
                std::vector<std::int32_t> reversed(sel_expert.size());
                for (std::size_t s = 0; s < reversed.size(); ++s) {
                    reversed[s] = static_cast<std::int32_t>(reversed.size() - 1 - s);
                }
                std::vector<float> y_rev(sel_expert.size() * rows);
                matmul_experts(type, ptrs.data(), *row_bytes(type, cols), 0, rows, cols, act.data(), sel_expert.data(),
                               sel_token.data(), sel_expert.size(), y_rev.data(), rows, reversed.data(), isa);
                for (std::size_t s = 0; s < sel_expert.size(); ++s) {
                    std::vector<float> ref(rows);
                    matmul_prepared(type, ptrs[sel_expert[s]], *row_bytes(type, cols), 0, rows, cols,
                                    act.data() + sel_token[s] * stride, 1, ref.data(), rows, isa);
                    ASSERT_EQ(std::memcmp(ref.data(), y.data() + s * rows, rows * sizeof(float)), 0)
                        << isa_name(isa) << " " << traits_of(type).name << " selection " << s;
                    ASSERT_EQ(std::memcmp(ref.data(), y_rev.data() + reversed[s] * rows, rows * sizeof(float)), 0)
                        << isa_name(isa) << " " << traits_of(type).name << " selection " << s << " (sel_out)";
                }
            }
    }
}

} // namespace
} // namespace sluice::kernels
