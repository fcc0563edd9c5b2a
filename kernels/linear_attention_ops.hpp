// Row ops of the Gated DeltaNet block and of gated attention (Qwen3.5, Qwen3-Next): the causal depthwise
// convolution with its carried state, L2 normalisation, the decay and update-strength gates, the output RMSNorm
// gated by SiLU(z), and the sigmoid gate on an attention output. Each is O(width) per token next to the O(width^2)
// projections around it, so they are plain C++ that the compiler vectorises, one version for every ISA level.
#pragma once

#include <cstddef>

namespace sluice::kernels {

/// Causal depthwise convolution over `n_tokens` tokens of `channels` channels, kernel width `width` (>= 1), with
/// the last width-1 inputs of the previous call carried in `state` ([width-1][channels], oldest first; zeros for
/// a new sequence):
///   y[t][c] = sum_{j<width} w[c][j] * x'[t + j][c],  x' = state followed by x,
/// then SiLU when `silu`. The weight is [channels][width] (GGUF ssm_conv1d: ne {width, channels}). On return
/// `state` holds the last width-1 rows of x'. Token t of x is at x + t*x_stride, of y at y + t*y_stride; y must
/// not overlap x. Channels [c_begin, c_end) only (thread-safe for disjoint ranges).
void causal_conv1d(const float* x, std::size_t x_stride, std::size_t n_tokens, std::size_t channels, const float* w,
                   std::size_t width, float* state, float* y, std::size_t y_stride, bool silu, std::size_t c_begin,
                   std::size_t c_end) noexcept;

/// In place: x = x / sqrt(sum(x^2) + eps), for `n_rows` rows of `n` floats (row r at x + r*stride).
void l2_norm_rows(float* x, std::size_t n_rows, std::size_t n, std::size_t stride, float eps) noexcept;

/// The per-head gates of the delta rule from the projections `alpha` and `b` (n_heads each):
///   g[h] = a[h] * softplus(alpha[h] + dt_bias[h]);  beta[h] = sigmoid(b[h])
/// where `a` is -exp(A_log) as GGUF stores it (ssm_a). softplus(x) = log(1 + exp(x)), x itself above 20.
void delta_net_gates(const float* alpha, const float* b, const float* dt_bias, const float* a, std::size_t n_heads,
                     float* g, float* beta) noexcept;

/// y[i] = rms_norm(x)[i] * weight[i] * silu(z[i]) over `n` floats (the gated output norm). `y` may alias `x`.
void rms_norm_silu_gated(const float* x, const float* weight, const float* z, float* y, std::size_t n,
                         float eps) noexcept;

/// x[i] *= sigmoid(gate[i]) over `n` floats (gated attention output).
void sigmoid_gate(float* x, const float* gate, std::size_t n) noexcept;

} // namespace sluice::kernels
