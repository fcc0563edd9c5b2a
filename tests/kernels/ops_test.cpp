// Transformer row ops against plain double-precision references.
#include "kernels/ops.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

namespace sluice::kernels {
namespace {

TEST(ops, rms_norm_matches_double_reference) {
    std::mt19937 rng(20);
    for (std::size_t n : {1, 7, 64, 1000, 4096}) {
        const auto x = test::random_floats(rng, n);
        const auto w = test::random_floats(rng, n);
        double ss = 0;
        for (float v : x) {
            ss += static_cast<double>(v) * v;
        }
        const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-6);
        std::vector<float> y(n);
        rms_norm(x.data(), w.data(), y.data(), n, 1e-6f);
        for (std::size_t i = 0; i < n; ++i) {
            const double ref = x[i] * scale * w[i];
            ASSERT_NEAR(y[i], ref, 1e-5 * std::fabs(ref) + 1e-6) << n << " " << i;
        }
    }
}

void rope_reference(std::vector<double>& v, std::size_t n_rot, double base, double freq_scale, std::int64_t pos,
                    bool neox) {
    for (std::size_t i = 0; i < n_rot / 2; ++i) {
        const double theta = static_cast<double>(pos) * freq_scale *
                             std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
        const std::size_t a = neox ? i : 2 * i;
        const std::size_t b = neox ? i + n_rot / 2 : 2 * i + 1;
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
}

TEST(ops, rope_normal_and_neox_match_double_reference) {
    std::mt19937 rng(21);
    for (bool neox : {false, true}) {
        for (auto [head_dim, n_rot, scale] :
             {std::tuple<std::size_t, std::size_t, float>{128, 128, 1.0f}, {64, 32, 0.25f}, {128, 64, 1.0f}}) {
            const std::size_t n_heads = 3;
            for (std::int64_t pos : {0, 1, 17, 4000, 100000}) {
                auto x = test::random_floats(rng, n_heads * head_dim);
                auto orig = x;
                rope_params p;
                p.n_rot = n_rot;
                p.freq_base = 1000000.0f;
                p.freq_scale = scale;
                p.layout = neox ? rope_layout::neox : rope_layout::normal;
                rope(x.data(), n_heads, head_dim, head_dim, pos, p);
                for (std::size_t h = 0; h < n_heads; ++h) {
                    std::vector<double> ref(orig.begin() + h * head_dim, orig.begin() + (h + 1) * head_dim);
                    rope_reference(ref, n_rot, 1000000.0, scale, pos, neox);
                    for (std::size_t i = 0; i < head_dim; ++i) {
                        // Angles up to 1e5 rad: float cos/sin of a double angle, error ~1e-6 relative to |x|.
                        ASSERT_NEAR(x[h * head_dim + i], ref[i], 2e-5 * (1 + std::fabs(ref[i])))
                            << "neox " << neox << " pos " << pos << " i " << i;
                    }
                }
            }
        }
    }
}

TEST(ops, softmax_silu_swiglu_match_double_reference) {
    std::mt19937 rng(22);
    for (std::size_t n : {1, 5, 151, 4096}) {
        auto x = test::random_floats(rng, n);
        for (auto& v : x) {
            v *= 10;
        }
        const auto up = test::random_floats(rng, n);
        double max = x[0], sum = 0;
        for (float v : x) {
            max = std::max(max, static_cast<double>(v));
        }
        for (float v : x) {
            sum += std::exp(v - max);
        }
        std::vector<float> s = x, si(n), sw(n);
        softmax(s.data(), n);
        silu(x.data(), si.data(), n);
        swiglu(x.data(), up.data(), sw.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
            const double sref = std::exp(x[i] - max) / sum;
            const double silu_ref = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
            ASSERT_NEAR(s[i], sref, 1e-6 + 1e-5 * sref);
            ASSERT_NEAR(si[i], silu_ref, 1e-5 * (1 + std::fabs(silu_ref)));
            ASSERT_NEAR(sw[i], silu_ref * up[i], 1e-5 * (1 + std::fabs(silu_ref * up[i])));
        }
    }
}

TEST(ops, router_picks_top_k_with_softmax_or_sigmoid_and_renormalises) {
    const float logits[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.5f, 0.0f};
    std::int32_t ids[3];
    float w[3];
    route_top_k(logits, 6, 3, router_scoring::softmax, nullptr, false, ids, w);
    EXPECT_EQ(ids[0], 1); // tie with expert 3: lower id first
    EXPECT_EQ(ids[1], 3);
    EXPECT_EQ(ids[2], 4);
    double z = 0;
    for (float l : logits) {
        z += std::exp(static_cast<double>(l));
    }
    EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
    EXPECT_NEAR(w[2], std::exp(1.5) / z, 1e-6);

    route_top_k(logits, 6, 2, router_scoring::sigmoid, nullptr, true, ids, w);
    EXPECT_NEAR(w[0] + w[1], 1.0f, 1e-6);
    EXPECT_NEAR(w[0], 0.5, 1e-6);

    // A selection bias changes the choice but not the weights' source (the unbiased scores).
    const float bias[6] = {5.0f, 0, 0, 0, 0, 0};
    route_top_k(logits, 6, 1, router_scoring::sigmoid, bias, false, ids, w);
    EXPECT_EQ(ids[0], 0);
    EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-0.5)), 1e-6);
}

} // namespace
} // namespace sluice::kernels
