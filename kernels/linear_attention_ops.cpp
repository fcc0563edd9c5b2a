// Row ops of Gated DeltaNet and gated attention, in plain C++ (see the header for why no ISA-specific versions).
#include "kernels/linear_attention_ops.hpp"

#include <cassert>
#include <cmath>
#include <cstring>

namespace sluice::kernels {

void causal_conv1d(const float* x, std::size_t x_stride, std::size_t n_tokens, std::size_t channels, const float* w,
                   std::size_t width, float* state, float* y, std::size_t y_stride, bool silu, std::size_t c_begin,
                   std::size_t c_end) noexcept {
    assert(width >= 1 && c_end <= channels);
    const std::size_t hist = width - 1;
    // Input row r of x' (state rows first, then x).
    const auto in = [&](std::size_t r, std::size_t c) {
        return r < hist ? state[r * channels + c] : x[(r - hist) * x_stride + c];
    };
    for (std::size_t t = 0; t < n_tokens; ++t) {
        float* yr = y + t * y_stride;
        for (std::size_t c = c_begin; c < c_end; ++c) {
            const float* wc = w + c * width;
            float acc = 0.0f;
            for (std::size_t j = 0; j < width; ++j) {
                acc += wc[j] * in(t + j, c);
            }
            yr[c] = silu ? acc / (1.0f + std::exp(-acc)) : acc;
        }
    }
    // The new state: the last `hist` rows of x' (which may still include old state rows for short inputs).
    const std::size_t total = hist + n_tokens;
    for (std::size_t r = 0; r < hist; ++r) {
        const std::size_t src = total - hist + r;
        if (src < hist) {
            if (src != r) {
                std::memmove(state + r * channels + c_begin, state + src * channels + c_begin,
                             (c_end - c_begin) * sizeof(float));
            }
        } else {
            std::memcpy(state + r * channels + c_begin, x + (src - hist) * x_stride + c_begin,
                        (c_end - c_begin) * sizeof(float));
        }
    }
}

void l2_norm_rows(float* x, std::size_t n_rows, std::size_t n, std::size_t stride, float eps) noexcept {
    for (std::size_t r = 0; r < n_rows; ++r) {
        float* row = x + r * stride;
        float sum = 0.0f;
        for (std::size_t i = 0; i < n; ++i) {
            sum += row[i] * row[i];
        }
        const float scale = 1.0f / std::sqrt(sum + eps);
        for (std::size_t i = 0; i < n; ++i) {
            row[i] *= scale;
        }
    }
}

void delta_net_gates(const float* alpha, const float* b, const float* dt_bias, const float* a, std::size_t n_heads,
                     float* g, float* beta) noexcept {
    for (std::size_t h = 0; h < n_heads; ++h) {
        const float x = alpha[h] + dt_bias[h];
        const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
        g[h] = a[h] * softplus;
        beta[h] = 1.0f / (1.0f + std::exp(-b[h]));
    }
}

void rms_norm_silu_gated(const float* x, const float* weight, const float* z, float* y, std::size_t n,
                         float eps) noexcept {
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
        sum += x[i] * x[i];
    }
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (std::size_t i = 0; i < n; ++i) {
        y[i] = x[i] * scale * weight[i] * (z[i] / (1.0f + std::exp(-z[i])));
    }
}

void sigmoid_gate(float* x, const float* gate, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        x[i] /= 1.0f + std::exp(-gate[i]);
    }
}

} // namespace sluice::kernels
