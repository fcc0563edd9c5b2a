// Row ops in plain C++ written so the compiler vectorizes them; they are a small share of a forward pass.
#include "kernels/ops.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

namespace sluice::kernels {

void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept {
    float sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sum += x[i] * x[i];
    }
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (std::size_t i = 0; i < n; ++i) {
        y[i] = x[i] * scale * (weight != nullptr ? weight[i] : 1.0f);
    }
}

void rope_yarn_corr_dims(const rope_params& p, double& low, double& high) noexcept {
    const auto dim = [&](float rotations) {
        return static_cast<double>(p.n_rot) *
               std::log(static_cast<double>(p.n_ctx_orig) / (rotations * 2.0 * std::numbers::pi)) /
               (2.0 * std::log(static_cast<double>(p.freq_base)));
    };
    double lo = dim(p.beta_fast);
    double hi = dim(p.beta_slow);
    if (p.yarn_truncate) {
        lo = std::floor(lo);
        hi = std::ceil(hi);
    }
    low = std::max(0.0, lo);
    high = std::min(static_cast<double>(p.n_rot) - 1.0, hi);
}

void rope(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t head_stride, std::int64_t pos,
          const rope_params& p) noexcept {
    assert(p.n_rot % 2 == 0 && p.n_rot <= head_dim);
    (void)head_dim;
    const std::size_t half = p.n_rot / 2;
    // Angles once per call, shared by every head.
    float cos_t[512];
    float sin_t[512];
    assert(half <= 512);
    double low = 0.0;
    double high = 0.0;
    if (p.ext_factor != 0.0f) {
        rope_yarn_corr_dims(p, low, high);
    }
    const double theta_scale = std::pow(static_cast<double>(p.freq_base), -2.0 / static_cast<double>(p.n_rot));
    double theta_extrap = static_cast<double>(pos);
    for (std::size_t i = 0; i < half; ++i, theta_extrap *= theta_scale) {
        double theta = theta_extrap * p.freq_scale;
        if (p.ext_factor != 0.0f) {
            const double ramp = std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
            const double mix = (1.0 - ramp) * p.ext_factor;
            theta = theta * (1.0 - mix) + theta_extrap * mix;
        }
        cos_t[i] = static_cast<float>(std::cos(theta)) * p.attn_factor;
        sin_t[i] = static_cast<float>(std::sin(theta)) * p.attn_factor;
    }
    for (std::size_t h = 0; h < n_heads; ++h) {
        float* v = x + h * head_stride;
        const std::size_t step = p.layout == rope_layout::neox ? half : 1;
        for (std::size_t i = 0; i < half; ++i) {
            const std::size_t a = p.layout == rope_layout::neox ? i : 2 * i;
            const float x0 = v[a];
            const float x1 = v[a + step];
            v[a] = x0 * cos_t[i] - x1 * sin_t[i];
            v[a + step] = x0 * sin_t[i] + x1 * cos_t[i];
        }
    }
}

void softmax(float* x, std::size_t n) noexcept {
    const float max = *std::max_element(x, x + n);
    float sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (std::size_t i = 0; i < n; ++i) {
        x[i] *= inv;
    }
}

void silu(const float* x, float* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        y[i] = x[i] / (1.0f + std::exp(-x[i]));
    }
}

void swiglu(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    }
}

namespace {

// Marks the experts of all but the `used` best groups as excluded. A group scores the sum of its two highest keys.
void keep_best_groups(const std::vector<float>& key, std::size_t n_groups, std::size_t used,
                      std::vector<char>& excluded) {
    const std::size_t per = key.size() / n_groups;
    thread_local std::vector<float> group_score;
    thread_local std::vector<std::int32_t> group_order;
    group_score.resize(n_groups);
    group_order.resize(n_groups);
    for (std::size_t g = 0; g < n_groups; ++g) {
        float first = -INFINITY, second = -INFINITY;
        for (std::size_t e = g * per; e < (g + 1) * per; ++e) {
            if (key[e] > first) {
                second = first;
                first = key[e];
            } else if (key[e] > second) {
                second = key[e];
            }
        }
        group_score[g] = first + second;
    }
    std::iota(group_order.begin(), group_order.end(), 0);
    std::partial_sort(group_order.begin(), group_order.begin() + static_cast<std::ptrdiff_t>(used), group_order.end(),
                      [&](std::int32_t a, std::int32_t b) {
                          return group_score[a] > group_score[b] || (group_score[a] == group_score[b] && a < b);
                      });
    excluded.assign(key.size(), 1);
    for (std::size_t i = 0; i < used; ++i) {
        const std::size_t g = static_cast<std::size_t>(group_order[i]);
        std::fill(excluded.begin() + static_cast<std::ptrdiff_t>(g * per),
                  excluded.begin() + static_cast<std::ptrdiff_t>((g + 1) * per), 0);
    }
}

} // namespace

void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, const route_params& p, std::int32_t* ids,
                 float* weights) noexcept {
    assert(k >= 1 && k <= n_experts);
    // Per-thread scratch that only grows: routing runs on compute threads for every token.
    thread_local std::vector<float> score;
    thread_local std::vector<float> key;
    thread_local std::vector<char> excluded;
    thread_local std::vector<std::int32_t> order;
    score.assign(logits, logits + n_experts);
    if (p.scoring == router_scoring::softmax) {
        softmax(score.data(), n_experts);
    } else if (p.scoring == router_scoring::sigmoid) {
        for (auto& s : score) {
            s = 1.0f / (1.0f + std::exp(-s));
        }
    }
    key.resize(n_experts);
    for (std::size_t e = 0; e < n_experts; ++e) {
        key[e] = score[e] + (p.selection_bias ? p.selection_bias[e] : 0.0f);
    }
    if (p.n_groups > 1) {
        assert(n_experts % p.n_groups == 0 && n_experts / p.n_groups >= 2);
        assert(p.groups_used >= 1 && p.groups_used <= p.n_groups && k <= p.groups_used * (n_experts / p.n_groups));
        keep_best_groups(key, p.n_groups, p.groups_used, excluded);
    } else {
        excluded.assign(n_experts, 0);
    }
    order.resize(n_experts);
    std::iota(order.begin(), order.end(), 0);
    // Excluded experts sort after every eligible one, whatever their key.
    const auto before = [&](std::int32_t a, std::int32_t b) {
        if (excluded[a] != excluded[b]) {
            return excluded[a] < excluded[b];
        }
        return key[a] > key[b] || (key[a] == key[b] && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), before);
    float sum = 0;
    for (std::size_t i = 0; i < k; ++i) {
        ids[i] = order[i];
        weights[i] = score[order[i]];
        sum += weights[i];
    }
    if (p.scoring == router_scoring::softmax_of_chosen) {
        softmax(weights, k);
        sum = 0; // the softmax already sums to one
    }
    for (std::size_t i = 0; i < k; ++i) {
        if (p.renormalize && sum > 0) {
            weights[i] /= sum;
        }
        weights[i] *= p.scale;
    }
}

void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, router_scoring scoring,
                 const float* selection_bias, bool renormalize, std::int32_t* ids, float* weights) noexcept {
    route_params p;
    p.scoring = scoring;
    p.selection_bias = selection_bias;
    p.renormalize = renormalize;
    route_top_k(logits, n_experts, k, p, ids, weights);
}

float yarn_mscale(float factor, float mscale) noexcept {
    return factor <= 1.0f ? 1.0f : 0.1f * mscale * std::log(factor) + 1.0f;
}

} // namespace sluice::kernels
