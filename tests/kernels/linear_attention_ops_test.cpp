// Gated DeltaNet row ops and multi-section RoPE against double-precision statements of their definitions.
#include "kernels/linear_attention_ops.hpp"
#include "kernels/ops.hpp"
#include "kernels/rope_multi.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice::kernels {
namespace {

double silu(double x) {
    return x / (1.0 + std::exp(-x));
}

TEST(linear_attention_ops, causal_conv1d_over_split_calls_equals_one_pass_over_zero_padded_input) {
    std::mt19937 rng(40);
    const std::size_t channels = 37, width = 4, n = 11;
    const auto x = test::random_floats(rng, n * channels);
    const auto w = test::random_floats(rng, channels * width);
    // Reference: zero history, y[t][c] = sum_j w[c][j] x[t + j - (width - 1)][c].
    std::vector<double> want(n * channels);
    for (std::size_t t = 0; t < n; ++t) {
        for (std::size_t c = 0; c < channels; ++c) {
            double acc = 0;
            for (std::size_t j = 0; j < width; ++j) {
                const std::ptrdiff_t src = static_cast<std::ptrdiff_t>(t + j) - static_cast<std::ptrdiff_t>(width - 1);
                acc += src < 0 ? 0.0 : double(w[c * width + j]) * x[std::size_t(src) * channels + c];
            }
            want[t * channels + c] = silu(acc);
        }
    }
    // Calls of 1, 2 (shorter than the history), 5 and 3 tokens, each split over two channel ranges.
    std::vector<float> state((width - 1) * channels, 0.0f), y(n * channels);
    std::size_t t0 = 0;
    for (std::size_t len : {1, 2, 5, 3}) {
        for (auto [b, e] : {std::pair<std::size_t, std::size_t>{0, 20}, {20, channels}}) {
            causal_conv1d(x.data() + t0 * channels, channels, len, channels, w.data(), width, state.data(),
                          y.data() + t0 * channels, channels, true, b, e);
        }
        t0 += len;
    }
    for (std::size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
    }
    // The carried state is the last width-1 inputs.
    for (std::size_t r = 0; r < width - 1; ++r) {
        for (std::size_t c = 0; c < channels; ++c) {
            ASSERT_EQ(state[r * channels + c], x[(n - (width - 1) + r) * channels + c]);
        }
    }
}

TEST(linear_attention_ops, l2_norm_gates_gated_rms_norm_and_sigmoid_gate_match_double) {
    std::mt19937 rng(41);
    const std::size_t n = 96;
    auto x = test::random_floats(rng, 2 * n);
    const auto orig = x;
    l2_norm_rows(x.data(), 2, n - 5, n, 1e-6f);
    for (std::size_t r = 0; r < 2; ++r) {
        double ss = 0;
        for (std::size_t i = 0; i < n - 5; ++i) {
            ss += double(orig[r * n + i]) * orig[r * n + i];
        }
        for (std::size_t i = 0; i < n; ++i) {
            const double want = i < n - 5 ? orig[r * n + i] / std::sqrt(ss + 1e-6) : orig[r * n + i];
            ASSERT_NEAR(x[r * n + i], want, 1e-6 * (1 + std::fabs(want)));
        }
    }
    const auto alpha = test::random_floats(rng, n), b = test::random_floats(rng, n), dt = test::random_floats(rng, n);
    auto a = test::random_floats(rng, n);
    for (auto& v : a) {
        v = -std::exp(v);
    }
    std::vector<float> g(n), beta(n);
    delta_net_gates(alpha.data(), b.data(), dt.data(), a.data(), n, g.data(), beta.data());
    for (std::size_t h = 0; h < n; ++h) {
        const double sp = std::log1p(std::exp(double(alpha[h]) + dt[h]));
        ASSERT_NEAR(g[h], a[h] * sp, 1e-5 * (1 + std::fabs(a[h] * sp)));
        ASSERT_NEAR(beta[h], 1.0 / (1.0 + std::exp(-double(b[h]))), 1e-6);
    }
    float big = 50.0f, zero = 0.0f, one = -1.0f, out_g = 0, out_b = 0;
    delta_net_gates(&big, &zero, &zero, &one, 1, &out_g, &out_b);
    EXPECT_EQ(out_g, -50.0f); // softplus is the identity above 20, as torch's is
    const auto z = test::random_floats(rng, n), wt = test::random_floats(rng, n);
    std::vector<float> y(n);
    rms_norm_silu_gated(orig.data(), wt.data(), z.data(), y.data(), n, 1e-6f);
    double ms = 0;
    for (std::size_t i = 0; i < n; ++i) {
        ms += double(orig[i]) * orig[i] / n;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const double want = orig[i] / std::sqrt(ms + 1e-6) * wt[i] * silu(z[i]);
        ASSERT_NEAR(y[i], want, 1e-5 * (1 + std::fabs(want)));
    }
    auto gated = orig;
    sigmoid_gate(gated.data(), z.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(gated[i], orig[i] / (1.0 + std::exp(-double(z[i]))), 1e-6 * (1 + std::fabs(orig[i])));
    }
}

TEST(linear_attention_ops, rope_multi_with_equal_positions_is_partial_neox_rope) {
    std::mt19937 rng(42);
    const std::size_t head_dim = 256, n_heads = 3;
    rope_multi_params mp;
    mp.n_rot = 64;
    mp.freq_base = 1e7f;
    mp.sections = {11, 11, 10, 0};
    rope_params p;
    p.n_rot = 64;
    p.freq_base = 1e7f;
    p.layout = rope_layout::neox;
    for (std::int64_t pos : {0, 3, 1000, 200000}) {
        auto a = test::random_floats(rng, n_heads * head_dim);
        auto b = a;
        rope_multi(a.data(), n_heads, head_dim, {pos, pos, pos, pos}, mp);
        rope(b.data(), n_heads, head_dim, head_dim, pos, p);
        for (std::size_t i = 0; i < a.size(); ++i) {
            ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << pos << " " << i;
        }
    }
}

TEST(linear_attention_ops, rope_multi_sections_drive_their_frequencies) {
    rope_multi_params p;
    p.n_rot = 64;
    p.sections = {11, 11, 10, 0};
    // Interleaved (Qwen3.5): t h w t h w ... while each section lasts, then time.
    const std::size_t interleaved[] = {0, 1, 2, 0, 1, 2};
    for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(rope_section_of(i, p), interleaved[i]) << i;
    }
    EXPECT_EQ(rope_section_of(30, p), 0u); // 30 % 3 == 0
    EXPECT_EQ(rope_section_of(31, p), 1u); // 31 < 33
    p.sections = {2, 1, 1, 0};
    EXPECT_EQ(rope_section_of(4, p), 0u); // 4 % 3 == 1 but past 3 * 1: time
    EXPECT_EQ(rope_section_of(5, p), 0u); // 5 % 3 == 2 but past 3 * 1
    p.layout = rope_section_layout::contiguous;
    p.sections = {2, 1, 1, 0};
    const std::size_t contiguous[] = {0, 0, 1, 2, 3};
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(rope_section_of(i, p), contiguous[i]) << i;
    }
    // A height position different from time moves exactly the height frequencies.
    p.layout = rope_section_layout::interleaved;
    p.n_rot = 8;
    p.sections = {2, 1, 1, 0};
    std::vector<float> a(8, 1.0f), b(8, 1.0f);
    rope_multi(a.data(), 1, 8, {5, 5, 5, 5}, p);
    rope_multi(b.data(), 1, 8, {5, 9, 5, 5}, p);
    for (std::size_t i = 0; i < 4; ++i) {
        const bool moved = rope_section_of(i, p) == 1;
        EXPECT_EQ(a[i] != b[i], moved) << i;
        EXPECT_EQ(a[i + 4] != b[i + 4], moved) << i;
    }
}

} // namespace
} // namespace sluice::kernels
