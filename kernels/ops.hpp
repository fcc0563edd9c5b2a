// Transformer element-wise and row ops on float rows: RMSNorm, RoPE, softmax, SiLU/SwiGLU, MoE routing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// y[i] = x[i] / sqrt(mean(x^2) + eps) * (weight ? weight[i] : 1). `y` may alias `x`.
void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept;

/// Pair layout of rotary embeddings: `normal` rotates (x[2i], x[2i+1]); `neox` rotates (x[i], x[i + n_rot/2]).
enum class rope_layout { normal, neox };

/// Rotary embedding parameters. Pair i of a head turns by theta_i = pos * freq_scale * freq_base^(-2i / n_rot)
/// (linear scaling), and cos/sin are multiplied by attn_factor.
///
/// YaRN (ext_factor != 0): with theta_e = pos * freq_base^(-2i / n_rot) (extrapolated) and theta_l = freq_scale
/// * theta_e (interpolated), theta_i = theta_l * (1 - m) + theta_e * m, m = ext_factor * (1 - ramp(i)), ramp(i) =
/// clamp((i - low) / max(0.001, high - low), 0, 1). low and high are the pair indices whose wavelength fits
/// beta_fast and beta_slow rotations into n_ctx_orig positions: d(b) = n_rot * ln(n_ctx_orig / (2 pi b)) /
/// (2 ln freq_base), low = max(0, d(beta_fast)), high = min(n_rot - 1, d(beta_slow)), rounded outward first
/// when yarn_truncate (llama.cpp always rounds; transformers unless rope_scaling.truncate is false, as in
/// gpt-oss). attn_factor is applied as given: the caller folds in YaRN's magnitude correction
/// (transformers' attention_factor, 0.1 ln(1 / freq_scale) + 1 by default).
struct rope_params {
    std::size_t n_rot = 0; ///< rotated dimensions per head (even, <= head_dim); the rest pass through
    float freq_base = 10000.0f;
    float freq_scale = 1.0f; ///< 1 / scaling factor
    rope_layout layout = rope_layout::normal;
    float ext_factor = 0.0f;      ///< YaRN extrapolation mix (0: off, 1: YaRN)
    float attn_factor = 1.0f;     ///< multiplies cos and sin
    float beta_fast = 32.0f;      ///< YaRN: rotations that mark the extrapolated (high-frequency) end
    float beta_slow = 1.0f;       ///< YaRN: rotations that mark the interpolated (low-frequency) end
    std::uint32_t n_ctx_orig = 0; ///< YaRN: the context the model was trained with before scaling
    bool yarn_truncate = true;    ///< YaRN: round low down and high up
};

/// YaRN's correction range [low, high] in pair indices for `p` (see rope_params).
void rope_yarn_corr_dims(const rope_params& p, double& low, double& high) noexcept;

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
enum class router_scoring {
    softmax,          ///< softmax over all experts, then the top k
    sigmoid,          ///< sigmoid of each logit, then the top k
    softmax_of_chosen ///< the top k raw logits, then a softmax over those k (gpt-oss); weights always sum to 1
};

/// How `route_top_k` scores, chooses and weighs experts.
struct route_params {
    router_scoring scoring = router_scoring::softmax;
    /// Added to each expert's score for the choice only (DeepSeek-V3's e_score_correction_bias); nullable.
    const float* selection_bias = nullptr;
    /// Divide the chosen experts' weights by their sum.
    bool renormalize = false;
    /// Grouped choice (DeepSeek-V3's noaux_tc): the experts form `n_groups` equal groups of consecutive ids, each
    /// group scores the sum of its two highest biased scores, and only the `groups_used` best groups (ties: lower
    /// group first) compete; the rest are out of the choice entirely. 1 group: a plain top-k.
    std::uint32_t n_groups = 1;
    std::uint32_t groups_used = 1;
    /// Multiplies the final weights, after any renormalisation (routed_scaling_factor).
    float scale = 1.0f;
};

/// Picks the `k` experts with the highest (biased) score from `n_experts` logits (ties: lower id first), within
/// the best groups when `p.n_groups > 1`. Scores are softmax or sigmoid of the logits, or the raw logits for
/// softmax_of_chosen. Writes ids and weights (the chosen unbiased scores, renormalised as `p` says, or the softmax
/// of the chosen logits; then scaled), highest first.
/// Requires 1 <= k <= n_experts; with groups: n_experts divisible by n_groups, at least 2 experts per group,
/// 1 <= groups_used <= n_groups and k <= groups_used * (n_experts / n_groups).
void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, const route_params& p, std::int32_t* ids,
                 float* weights) noexcept;

/// The same with one group and no scaling: scores are softmax or sigmoid of the logits, or the raw logits for
/// softmax_of_chosen; `selection_bias` (nullable) is added for the choice only. Writes ids and weights (the chosen
/// scores, divided by their sum when `renormalize`), highest first. Requires 1 <= k <= n_experts.
void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, router_scoring scoring,
                 const float* selection_bias, bool renormalize, std::int32_t* ids, float* weights) noexcept;

/// YaRN's default attention factor for a scaling `factor` and an mscale: 1 when factor <= 1, else
/// 0.1 * mscale * ln(factor) + 1 (transformers' get_mscale). DeepSeek-V3 multiplies its softmax scale by the square
/// of yarn_mscale(factor, mscale_all_dim).
float yarn_mscale(float factor, float mscale = 1.0f) noexcept;

} // namespace sluice::kernels
