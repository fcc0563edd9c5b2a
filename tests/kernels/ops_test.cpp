// Transformer row ops against plain double-precision references.
#include "kernels/ops.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

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

// transformers' _compute_yarn_parameters in double: the frequency of pair i and the cos/sin multiplier.
double yarn_reference_frequency(std::size_t i, std::size_t dim, double base, double factor, double orig_ctx,
                                double beta_fast, double beta_slow, bool truncate) {
    const auto corr = [&](double rot) {
        return dim * std::log(orig_ctx / (rot * 2 * 3.14159265358979323846)) / (2 * std::log(base));
    };
    double low = corr(beta_fast), high = corr(beta_slow);
    if (truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim) - 1);
    if (low == high) {
        high += 0.001;
    }
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 / std::pow(base, 2.0 * static_cast<double>(i) / static_cast<double>(dim));
    const double interpolation = extrapolation / factor;
    const double keep = 1 - ramp; // share of the unscaled frequency
    return interpolation * (1 - keep) + extrapolation * keep;
}

TEST(ops, rope_yarn_matches_transformers_frequencies_and_scales_cos_sin) {
    std::mt19937 rng(23);
    struct yarn_case {
        std::size_t n_rot;
        double base, factor, orig, beta_fast, beta_slow;
        bool truncate;
    };
    // DeepSeek-V3 (64 rope dims, factor 40 over 4096), the deepseek_v3 fixture (8 dims, factor 4 over 128) and
    // gpt-oss (64 dims, factor 32 over 4096, no truncation).
    for (const auto& c : {yarn_case{64, 10000, 40, 4096, 32, 1, true}, yarn_case{8, 10000, 4, 128, 32, 1, true},
                          yarn_case{64, 150000, 32, 4096, 32, 1, false}}) {
        rope_params p;
        p.n_rot = c.n_rot;
        p.freq_base = static_cast<float>(c.base);
        p.freq_scale = static_cast<float>(1.0 / c.factor);
        p.ext_factor = 1.0f;
        p.beta_fast = static_cast<float>(c.beta_fast);
        p.beta_slow = static_cast<float>(c.beta_slow);
        p.n_ctx_orig = static_cast<std::uint32_t>(c.orig);
        p.yarn_truncate = c.truncate;
        p.attn_factor = yarn_mscale(static_cast<float>(c.factor));
        EXPECT_NEAR(p.attn_factor, 0.1 * std::log(c.factor) + 1, 1e-6);
        // The correction range transformers computes (truncated: whole dimensions).
        double low = 0, high = 0;
        rope_yarn_corr_dims(p, low, high);
        const auto corr = [&](double rot) {
            return c.n_rot * std::log(c.orig / (rot * 2 * 3.14159265358979323846)) / (2 * std::log(c.base));
        };
        const double want_low = std::max(c.truncate ? std::floor(corr(c.beta_fast)) : corr(c.beta_fast), 0.0);
        const double want_high =
            std::min(c.truncate ? std::ceil(corr(c.beta_slow)) : corr(c.beta_slow), static_cast<double>(c.n_rot) - 1);
        EXPECT_NEAR(low, want_low, 1e-9);
        EXPECT_NEAR(high, want_high, 1e-9);
        for (std::int64_t pos : {0, 3, 200, 100000}) {
            const std::size_t head_dim = c.n_rot + 4;
            auto x = test::random_floats(rng, head_dim);
            const auto orig = x;
            rope(x.data(), 1, head_dim, head_dim, pos, p);
            for (std::size_t i = 0; i < c.n_rot / 2; ++i) {
                const double t =
                    static_cast<double>(pos) * yarn_reference_frequency(i, c.n_rot, c.base, c.factor, c.orig,
                                                                        c.beta_fast, c.beta_slow, c.truncate);
                const double m = p.attn_factor;
                const double r0 = m * (orig[2 * i] * std::cos(t) - orig[2 * i + 1] * std::sin(t));
                const double r1 = m * (orig[2 * i] * std::sin(t) + orig[2 * i + 1] * std::cos(t));
                ASSERT_NEAR(x[2 * i], r0, 3e-5 * (1 + std::fabs(r0))) << "pos " << pos << " pair " << i;
                ASSERT_NEAR(x[2 * i + 1], r1, 3e-5 * (1 + std::fabs(r1))) << "pos " << pos << " pair " << i;
            }
            for (std::size_t i = c.n_rot; i < head_dim; ++i) {
                ASSERT_EQ(x[i], orig[i]); // past n_rot nothing turns
            }
        }
    }
    EXPECT_EQ(yarn_mscale(1.0f, 0.707f), 1.0f);
    EXPECT_NEAR(yarn_mscale(40.0f, 0.707f), 0.1 * 0.707 * std::log(40.0) + 1, 1e-6);
}

TEST(ops, rope_without_yarn_is_unchanged_by_the_yarn_fields) {
    rope_params p;
    p.n_rot = 16;
    p.freq_scale = 0.5f;
    p.beta_fast = 4;
    p.n_ctx_orig = 64;
    std::vector<float> a(16, 1.0f), b(16, 1.0f);
    rope(a.data(), 1, 16, 16, 7, p);
    rope_params plain;
    plain.n_rot = 16;
    plain.freq_scale = 0.5f;
    rope(b.data(), 1, 16, 16, 7, plain);
    EXPECT_EQ(a, b);
}

// Grouped routing in double, the way transformers' DeepseekV3TopkRouter does it (masked experts can never win
// here: every eligible biased score is kept above the mask).
std::vector<int> grouped_reference(const std::vector<float>& logits, const std::vector<float>& bias, std::size_t groups,
                                   std::size_t used, std::size_t k) {
    const std::size_t n = logits.size(), per = n / groups;
    std::vector<double> key(n);
    for (std::size_t e = 0; e < n; ++e) {
        key[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e]))) + bias[e];
    }
    std::vector<std::pair<double, int>> gs;
    for (std::size_t g = 0; g < groups; ++g) {
        std::vector<double> v(key.begin() + g * per, key.begin() + (g + 1) * per);
        std::sort(v.rbegin(), v.rend());
        gs.emplace_back(v[0] + v[1], static_cast<int>(g));
    }
    std::sort(gs.begin(), gs.end(),
              [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::vector<std::pair<double, int>> cand;
    for (std::size_t i = 0; i < used; ++i) {
        for (std::size_t e = gs[i].second * per; e < (gs[i].second + 1) * per; ++e) {
            cand.emplace_back(key[e], static_cast<int>(e));
        }
    }
    std::sort(cand.begin(), cand.end(),
              [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::vector<int> ids;
    for (std::size_t i = 0; i < k; ++i) {
        ids.push_back(cand[i].second);
    }
    return ids;
}

TEST(ops, grouped_sigmoid_routing_matches_reference_choice_renormalises_and_scales) {
    std::mt19937 rng(24);
    struct group_case {
        std::size_t n, groups, used, k;
    };
    // DeepSeek-V3 (256 experts, 8 groups, top 4 groups, 8 chosen), the fixture's shape, Kimi-K2 (384, 1 group).
    for (const auto& c : {group_case{256, 8, 4, 8}, group_case{8, 4, 2, 2}, group_case{384, 1, 1, 8}}) {
        for (int trial = 0; trial < 50; ++trial) {
            auto logits = test::random_floats(rng, c.n);
            auto bias = test::random_floats(rng, c.n);
            for (auto& b : bias) {
                b *= 0.1f;
            }
            route_params p;
            p.scoring = router_scoring::sigmoid;
            p.selection_bias = bias.data();
            p.renormalize = true;
            p.n_groups = static_cast<std::uint32_t>(c.groups);
            p.groups_used = static_cast<std::uint32_t>(c.used);
            p.scale = 2.5f;
            std::vector<std::int32_t> ids(c.k);
            std::vector<float> w(c.k);
            route_top_k(logits.data(), c.n, c.k, p, ids.data(), w.data());
            const auto ref = grouped_reference(logits, bias, c.groups, c.used, c.k);
            double sum = 0;
            for (std::size_t i = 0; i < c.k; ++i) {
                ASSERT_EQ(ids[i], ref[i]) << c.n << " trial " << trial << " rank " << i;
                sum += 1.0 / (1.0 + std::exp(-static_cast<double>(logits[ids[i]])));
            }
            for (std::size_t i = 0; i < c.k; ++i) {
                const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[ids[i]])));
                ASSERT_NEAR(w[i], 2.5 * s / sum, 1e-5);
            }
        }
    }
}

TEST(ops, grouped_routing_never_picks_outside_the_chosen_groups) {
    // Group 1 holds the single best expert but a weak partner; groups 0 and 2 win on their top-2 sums.
    const float logits[6] = {2.0f, 1.9f, 5.0f, -5.0f, 1.8f, 1.7f};
    route_params p;
    p.scoring = router_scoring::sigmoid;
    p.n_groups = 3;
    p.groups_used = 2;
    std::int32_t ids[3];
    float w[3];
    route_top_k(logits, 6, 3, p, ids, w);
    EXPECT_EQ(ids[0], 0);
    EXPECT_EQ(ids[1], 1);
    EXPECT_EQ(ids[2], 4);
    // One group, scale 1: the grouped call equals the plain one.
    std::int32_t a[2], b[2];
    float wa[2], wb[2];
    route_params plain;
    plain.scoring = router_scoring::sigmoid;
    route_top_k(logits, 6, 2, plain, a, wa);
    route_top_k(logits, 6, 2, router_scoring::sigmoid, nullptr, false, b, wb);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[1], b[1]);
    EXPECT_EQ(wa[0], wb[0]);
}

} // namespace
} // namespace sluice::kernels
