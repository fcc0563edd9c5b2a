// Transformer element-wise and row ops on float rows: RMSNorm, RoPE, softmax, SiLU/SwiGLU, MoE routing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// y[i] = x[i] / sqrt(mean(x^2) + eps) * (weight ? weight[i] : 1). `y` may alias `x`.
void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept;

/// Pair layout of rotary embeddings: `normal` rotates (x[2i], x[2i+1]); `neox` rotates (x[i], x[i + n_rot/2]).
enum class rope_layout { normal, neox };

/// Rotary embedding parameters. theta_i = pos * freq_scale * freq_base^(-2i / n_rot).
/// The YaRN fields are carried for models that set them; this version applies only linear scaling
/// (ext_factor must be 0) and multiplies the result by attn_factor.
struct rope_params {
    std::size_t n_rot = 0;        ///< rotated dimensions per head (even, <= head_dim); the rest pass through
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;      ///< linear scaling: 1 / scaling factor
    rope_layout layout = rope_layout::normal;
    float ext_factor = 0.0f;      ///< YaRN (carried, not applied)
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;      ///< YaRN (carried, not applied)
    float beta_slow = 1.0f;       ///< YaRN (carried, not applied)
    std::uint32_t n_ctx_orig = 0; ///< YaRN (carried, not applied)
};

/// Applies RoPE in place to `n_heads` heads of `head_dim` floats (head h at x + h*head_stride) at position `pos`.
void rope(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t head_stride, std::int64_t pos,
          const rope_params& p) noexcept;

/// In-place numerically stable softmax of `n` floats (n >= 1).
void softmax(float* x, std::size_t n) noexcept;

/// y[i] = x[i] * sigmoid(x[i]). `y` may alias `x`.
void silu(const float* x, float* y, std::size_t n) noexcept;

/// out[i] = silu(gate[i]) * up[i]. `out` may alias either input.
void swiglu(const float* gate, const float* up, float* out, std::size_t n) noexcept;

/// How router logits become expert probabilities.
enum class router_scoring { softmax, sigmoid };

/// Picks the `k` experts with the highest score (ties: lower id first) from `n_experts` logits.
/// Scores are softmax or sigmoid of the logits; `selection_bias` (nullable) is added for the choice only.
/// Writes ids and weights (the chosen scores, divided by their sum when `renormalize`), highest first.
/// Requires 1 <= k <= n_experts.
void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, router_scoring scoring,
                 const float* selection_bias, bool renormalize, std::int32_t* ids, float* weights) noexcept;

} // namespace sluice::kernels
