// Transformer element-wise and row ops on float rows: RMSNorm, RoPE, softmax, SiLU/SwiGLU, MoE routing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// y[i] = x[i] / sqrt(mean(x^2) + eps) * (weight ? weight[i] : 1). `y` may alias `x`.
void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept;

/// Pair layout of rotary embeddings: `normal` rotates (x[2i], x[2i+1]); `neox` rotates (x[i], x[i + n_rot/2]).
enum class rope_layout { normal, neox };

/// Rotary embedding parameters. Pair i (of n_rot / 2) turns by theta_i = pos * f_i with
/// f_i = freq_base^(-2i / n_rot) * freq_scale, or with YaRN (ext_factor > 0) a blend of the scaled and unscaled
/// frequency: f_i = freq_base^(-2i / n_rot) * (freq_scale * (1 - r_i) + r_i), r_i = ext_factor * ramp_i, where
/// ramp_i falls linearly from 1 to 0 between the correction dimensions that beta_fast and beta_slow rotations over
/// n_ctx_orig positions give (floored/ceiled when yarn_truncate, as transformers and llama.cpp do). cos and sin are
/// multiplied by attn_factor: the final multiplier (transformers' attention_scaling; for YaRN usually
/// 0.1 ln(1 / freq_scale) + 1, which llama.cpp folds in on its own).
struct rope_params {
    std::size_t n_rot = 0; ///< rotated dimensions per head (even, <= head_dim); the rest pass through
    float freq_base = 10000.0f;
    float freq_scale = 1.0f; ///< 1 / scaling factor (linear and YaRN)
    rope_layout layout = rope_layout::normal;
    float ext_factor = 0.0f;      ///< YaRN blend strength: 0 off (plain linear scaling), 1 full YaRN
    float attn_factor = 1.0f;     ///< multiplies cos and sin
    float beta_fast = 32.0f;      ///< YaRN: rotations at which the ramp starts (extrapolated below)
    float beta_slow = 1.0f;       ///< YaRN: rotations at which it ends (interpolated above)
    std::uint32_t n_ctx_orig = 0; ///< YaRN: the context length the model was trained at
    bool yarn_truncate = true;    ///< YaRN: round the correction dimensions outwards to whole dimensions
};

/// YaRN's correction range [low, high] in pair dimensions (clamped to [0, n_rot - 1]), as used by `rope`.
void rope_yarn_corr_dims(const rope_params& p, double& low, double& high) noexcept;

/// The per-pair angle increment f_i of pair `i` (theta_i = pos * f_i), YaRN included.
double rope_pair_frequency(const rope_params& p, std::size_t i, double low, double high) noexcept;

/// YaRN's default attention factor for a scaling `factor` and an mscale: 1 when factor <= 1, else
/// 0.1 * mscale * ln(factor) + 1 (transformers' get_mscale).
float yarn_mscale(float factor, float mscale = 1.0f) noexcept;

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
/// the best groups when `p.n_groups > 1`. Scores are softmax or sigmoid of the logits. Writes ids and weights (the
/// chosen unbiased scores, renormalised and scaled as `p` says), highest first.
/// Requires 1 <= k <= n_experts; with groups: n_experts divisible by n_groups, at least 2 experts per group,
/// 1 <= groups_used <= n_groups and k <= groups_used * (n_experts / n_groups).
void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, const route_params& p, std::int32_t* ids,
                 float* weights) noexcept;

/// The same with one group and no scaling.
void route_top_k(const float* logits, std::size_t n_experts, std::size_t k, router_scoring scoring,
                 const float* selection_bias, bool renormalize, std::int32_t* ids, float* weights) noexcept;

} // namespace sluice::kernels
