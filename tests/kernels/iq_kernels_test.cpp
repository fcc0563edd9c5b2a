// The IQ1/IQ2/IQ3 kernels at every ISA level against the scalar reference, bit for bit: each keeps the reference's
// exact integer super-block sums and its float steps, so the 1-token and the 4-token (prefill) products at AVX2 and
// AVX-512 equal the scalar results exactly, on random blocks and on blocks holding every grid index.
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>

namespace sluice::kernels {
namespace {

constexpr quant_type iq_formats[] = {quant_type::iq2_xxs, quant_type::iq2_xs, quant_type::iq2_s, quant_type::iq3_xxs,
                                     quant_type::iq3_s,   quant_type::iq1_s,  quant_type::iq1_m};

// rows x tokens products of `w` with `x` at `isa` (out[t * rows + r]).
std::vector<float> products(isa_level isa, quant_type type, const std::vector<std::uint8_t>& w, std::size_t rows,
                            std::size_t cols, const std::vector<float>& x, std::size_t tokens) {
    const std::size_t stride = prepared_row_bytes(type, cols);
    std::vector<std::uint8_t> act(stride * tokens);
    prepare_activations(type, x.data(), cols, tokens, cols, act.data(), isa_level::scalar);
    std::vector<float> out(rows * tokens);
    matmul_prepared(type, w.data(), *row_bytes(type, cols), 0, rows, cols, act.data(), tokens, out.data(), rows, isa);
    return out;
}

void expect_bit_identical(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << what << " output " << i << ": " << got[i] << " vs scalar " << want[i];
    }
}

TEST(iq_kernels, one_and_four_token_products_equal_the_scalar_reference_bit_for_bit) {
    std::mt19937 rng(17);
    for (quant_type type : iq_formats) {
        for (std::size_t blocks : {1, 2, 3, 8, 13}) {
            const std::size_t rows = 6, cols = 256 * blocks;
            const auto w = test::random_weights(rng, type, rows, cols);
            for (std::size_t tokens : {1, 4, 5, 9}) {
                const auto x = test::random_floats(rng, cols * tokens);
                const auto want = products(isa_level::scalar, type, w, rows, cols, x, tokens);
                for (isa_level isa : supported_isas()) {
                    expect_bit_identical(products(isa, type, w, rows, cols, x, tokens), want,
                                         std::string(traits_of(type).name) + " at " + std::string(isa_name(isa)) +
                                             ", " + std::to_string(blocks) + " blocks, " + std::to_string(tokens) +
                                             " tokens");
                }
            }
        }
    }
}

// Activations at both ends of Q8_K's range (+-127) in every position, with weights whose index bytes run through
// every value, so every grid row, sign pattern and scale meets the largest products the kernels must hold exactly.
TEST(iq_kernels, every_grid_index_and_extreme_activations_equal_the_scalar_reference) {
    std::mt19937 rng(18);
    for (quant_type type : iq_formats) {
        const std::size_t rows = 64, cols = 256 * 4;
        auto w = test::random_weights(rng, type, rows, cols);
        const auto random = test::random_weights(rng, type, rows, cols);
        // Walk every byte through 0..255 across the rows while keeping the f16 scale fields of random_weights.
        const std::size_t block_bytes = traits_of(type).block_bytes;
        for (std::size_t i = 0; i < w.size(); ++i) {
            const std::size_t in_block = i % block_bytes;
            const bool scale_field = (type == quant_type::iq1_m) ? in_block >= 48 : in_block < 2;
            w[i] = scale_field ? random[i] : static_cast<std::uint8_t>(i / block_bytes + 37 * in_block);
        }
        std::vector<float> x(cols * 4);
        for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] = (i % 3 == 0) ? -1.0f : (i % 3 == 1 ? 1.0f : 0.5f);
        }
        const auto want = products(isa_level::scalar, type, w, rows, cols, x, 4);
        for (isa_level isa : supported_isas()) {
            expect_bit_identical(products(isa, type, w, rows, cols, x, 4), want,
                                 std::string(traits_of(type).name) + " at " + std::string(isa_name(isa)));
            expect_bit_identical(products(isa, type, w, rows, cols, x, 1),
                                 products(isa_level::scalar, type, w, rows, cols, x, 1),
                                 std::string(traits_of(type).name) + " 1 token at " + std::string(isa_name(isa)));
        }
    }
}

} // namespace
} // namespace sluice::kernels
