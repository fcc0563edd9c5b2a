// The logits reductions at every ISA level against the scalar reference: maxima and first indices exactly, sums of
// exponentials within 1e-6 relative, on rows with NaN, -inf, ties and every tail length.
#include "kernels/logits.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace sluice::kernels {
namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

std::vector<float> random_row(std::mt19937& rng, std::size_t n) {
    std::normal_distribution<float> dist(0.0f, 4.0f);
    std::uniform_int_distribution<int> special(0, 19);
    std::vector<float> row(n);
    for (auto& v : row) {
        const int s = special(rng);
        v = s == 0 ? -inf : s == 1 ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
    }
    return row;
}

TEST(logits, every_level_finds_the_scalar_maximum_and_its_first_index) {
    std::mt19937 rng(21);
    for (std::size_t n : {1, 7, 8, 15, 16, 17, 31, 33, 100, 1000, 151936}) {
        auto row = random_row(rng, n);
        if (n > 40) {
            row[n / 3] = row[n - 2] = 100.0f; // a tie: the lower index wins
        }
        bool found_ref = false;
        const std::size_t ref = first_argmax(row.data(), n, found_ref, isa_level::scalar);
        for (isa_level isa : supported_isas()) {
            bool found = false;
            EXPECT_EQ(first_argmax(row.data(), n, found, isa), ref) << isa_name(isa) << " n " << n;
            EXPECT_EQ(found, found_ref);
            EXPECT_EQ(max_value(row.data(), n, isa), max_value(row.data(), n, isa_level::scalar)) << isa_name(isa);
        }
        if (n > 40) {
            EXPECT_EQ(ref, n / 3);
        }
    }
}

TEST(logits, a_row_without_finite_values_has_no_maximum) {
    const std::vector<float> row = {-inf, std::numeric_limits<float>::quiet_NaN(),
                                    -inf, -inf,
                                    -inf, -inf,
                                    -inf, -inf,
                                    -inf, -inf,
                                    -inf, -inf,
                                    -inf, -inf,
                                    -inf, -inf,
                                    -inf, -inf};
    for (isa_level isa : supported_isas()) {
        bool found = true;
        EXPECT_EQ(first_argmax(row.data(), row.size(), found, isa), 0u) << isa_name(isa);
        EXPECT_FALSE(found);
        EXPECT_EQ(max_value(row.data(), row.size(), isa), -inf);
    }
}

TEST(logits, every_level_sums_exponentials_within_a_millionth_of_double_exp) {
    std::mt19937 rng(22);
    for (std::size_t n : {1, 7, 8, 9, 16, 17, 63, 1000, 151936}) {
        auto row = random_row(rng, n);
        row[0] = 5.0f; // at least one finite value
        const float top = max_value(row.data(), n, isa_level::scalar);
        const double ref = sum_exp(row.data(), n, top, isa_level::scalar);
        ASSERT_GE(ref, 1.0);
        for (isa_level isa : supported_isas()) {
            const double got = sum_exp(row.data(), n, top, isa);
            EXPECT_NEAR(got, ref, 1e-6 * ref) << isa_name(isa) << " n " << n;
        }
    }
}

TEST(logits, far_below_the_maximum_terms_vanish_without_breaking_the_sum) {
    // Differences down to -1000: the vector exps clamp their argument, so tiny terms are 0 or subnormal, never NaN.
    std::vector<float> row(40);
    for (std::size_t i = 0; i < row.size(); ++i) {
        row[i] = -25.0f * static_cast<float>(i);
    }
    const double ref = sum_exp(row.data(), row.size(), 0.0f, isa_level::scalar);
    for (isa_level isa : supported_isas()) {
        const double got = sum_exp(row.data(), row.size(), 0.0f, isa);
        EXPECT_NEAR(got, ref, 1e-6 * ref) << isa_name(isa);
        // exp(0) + exp(-25) + ...: the first two terms carry it.
        EXPECT_NEAR(got, 1.0 + std::exp(-25.0), 1e-6) << isa_name(isa);
    }
}

} // namespace
} // namespace sluice::kernels
