// Hyperparameters of a decoder-only transformer as GGUF metadata describes them, read and written by key.
#pragma once

#include "kernels/ops.hpp"
#include "runtime/gguf/metadata.hpp"
#include "sluice/error.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::models {

/// How the per-head query/key normalisation (if any) is applied.
enum class qk_norm_kind {
    none,
    per_head, ///< RMSNorm over each head (weight of head_dim): qwen3, qwen3moe
    whole,    ///< RMSNorm over all heads at once (weight of n_head*head_dim): olmoe
};

/// gpt-oss's extras (arch gpt-oss; left at their defaults by every other architecture): sliding-window attention
/// on alternating layers, and experts with the clamped SwiGLU routed by a softmax over the top-k raw logits. Its
/// attention sinks and biases on attention, router and experts are tensors the blocks use when present.
struct gpt_oss_hparams {
    std::uint32_t sliding_window = 0; ///< attention.sliding_window: positions a windowed layer's token sees (0: none)
    std::uint32_t swa_period = 0;     ///< attention.sliding_window_pattern: layer il is windowed when
                                      ///< il % period < period - 1 (gpt-oss: 2, so even layers)
    float swiglu_alpha = 0.0f;        ///< experts' clamped SwiGLU, g * sigmoid(alpha g) * (u + 1) (0: plain SwiGLU)
    float swiglu_limit = 0.0f;        ///< its clamp: gate <= limit, |up| <= limit
    bool softmax_of_chosen = false;   ///< routing: the top-k raw logits, then a softmax over those k

    /// Whether layer `il` attends over a sliding window.
    [[nodiscard]] bool windowed(std::uint32_t il) const noexcept {
        return sliding_window != 0 && swa_period != 0 && il % swa_period < swa_period - 1;
    }
};

/// The Gated DeltaNet hybrids (qwen35moe, qwen35, qwen3next): linear-attention layers between gated full-attention
/// layers (runtime/models/qwen35.cpp; keys under `<arch>.ssm.*`). Empty (state_size 0) for every other model.
struct hybrid_hparams {
    std::uint32_t conv_kernel = 0;    ///< ssm.conv_kernel: width of the causal convolution
    std::uint32_t state_size = 0;     ///< ssm.state_size: key and value head dimension d
    std::uint32_t group_count = 0;    ///< ssm.group_count: key heads
    std::uint32_t time_step_rank = 0; ///< ssm.time_step_rank: value heads
    std::uint32_t inner_size = 0;     ///< ssm.inner_size: value heads x d
    std::vector<bool> recurrent;      ///< per layer of the main stack: linear attention (else full attention)
    std::array<std::uint32_t, 4> rope_sections{}; ///< rope.dimension_sections (M-RoPE; qwen35, qwen35moe)
    std::uint32_t nextn_layers = 0;               ///< nextn_predict_layers: MTP blocks after the main stack
    bool tiled_value_heads = false; ///< value head h reads key head h % group_count (llama.cpp's qwen35 files)
    bool fused_ba = false;          ///< beta and alpha projections fused per key head (ssm_ba, qwen3next)

    [[nodiscard]] bool enabled() const noexcept { return state_size != 0; }
    /// Channels of the causal convolution: q and k of every key head, v of every value head.
    [[nodiscard]] std::uint32_t conv_channels() const noexcept { return 2 * group_count * state_size + inner_size; }
    /// Floats one linear-attention layer carries per sequence: the convolution's last inputs and the delta-rule
    /// states.
    [[nodiscard]] std::uint64_t state_floats() const noexcept {
        return std::uint64_t{conv_kernel - 1} * conv_channels() +
               std::uint64_t{time_step_rank} * state_size * state_size;
    }
};

/// Multi-head latent attention (deepseek2: DeepSeek-V2/V3/R1, Kimi-K2; runtime/models/deepseek2.cpp). The GGUF view
/// is one KV head whose key is the latent plus the rotary key: attention.key_length = kv_lora_rank + rope dims,
/// attention.value_length = kv_lora_rank; the per-head sizes are key_length_mla / value_length_mla. Empty
/// (kv_lora_rank 0) for every other model.
struct mla_hparams {
    std::uint32_t q_lora_rank = 0;  ///< attention.q_lora_rank (0: a plain attn_q, DeepSeek-V2-Lite)
    std::uint32_t kv_lora_rank = 0; ///< attention.kv_lora_rank: r, the latent cached per position
    std::uint32_t nope_dim = 0;     ///< attention.key_length_mla - rope.dimension_count: a head's non-rotary key
    std::uint32_t v_dim = 0;        ///< attention.value_length_mla: a head's value
    float yarn_log_multiplier = 0.0f; ///< rope.scaling.yarn_log_multiplier: 0.1 * transformers' mscale_all_dim
    float softmax_mscale = 1.0f;      ///< YaRN: 1 + yarn_log_multiplier * ln(factor), squared into the softmax scale

    [[nodiscard]] bool enabled() const noexcept { return kv_lora_rank != 0; }
};

/// Expert routing beyond the plain softmax top-k, and the FFN layout around it (deepseek2, glm4moe): sigmoid
/// scores with a selection bias (tensor exp_probs_b), grouped choice, a scale on the weights, leading dense layers,
/// shared experts added unweighted. Defaults are every other MoE's.
struct routing_hparams {
    kernels::router_scoring scoring = kernels::router_scoring::softmax; ///< expert_gating_func (1 softmax, 2 sigmoid)
    std::uint32_t n_groups = 1;       ///< expert_group_count
    std::uint32_t groups_used = 1;    ///< expert_group_used_count
    float weights_scale = 1.0f;       ///< expert_weights_scale (routed_scaling_factor)
    std::uint32_t leading_dense = 0;  ///< leading_dense_block_count: layers with a dense FFN before the MoE ones
    std::uint32_t shared_count = 0;   ///< expert_shared_count: shared experts fused into one of n_ff_shexp
};

/// Everything the forward pass needs to know about a model's shape. Field names follow the GGUF keys
/// (`<arch>.embedding_length` -> n_embd). Arch hooks fill in what the keys do not say.
struct model_hparams {
    std::string arch;                 ///< general.architecture
    std::uint32_t n_vocab = 0;        ///< rows of token_embd (the tokenizer may have fewer tokens)
    std::uint32_t n_ctx_train = 0;    ///< context_length
    std::uint32_t n_embd = 0;         ///< embedding_length
    std::uint32_t n_layer = 0;        ///< block_count
    std::uint32_t n_ff = 0;           ///< feed_forward_length (dense FFN; 0 when every layer is MoE)
    std::uint32_t n_head = 0;         ///< attention.head_count
    std::uint32_t n_head_kv = 0;      ///< attention.head_count_kv (defaults to n_head)
    std::uint32_t head_dim = 0;       ///< attention.key_length (defaults to n_embd / n_head)
    std::uint32_t head_dim_v = 0;     ///< attention.value_length (defaults to head_dim)
    float rms_eps = 1e-6f;            ///< attention.layer_norm_rms_epsilon
    kernels::rope_params rope;        ///< rope.dimension_count, rope.freq_base, rope.scaling.*; layout from the arch
    std::uint32_t n_expert = 0;       ///< expert_count (0: dense model)
    std::uint32_t n_expert_used = 0;  ///< expert_used_count
    std::uint32_t n_ff_exp = 0;       ///< expert_feed_forward_length (defaults to n_ff)
    std::uint32_t n_ff_shexp = 0;     ///< expert_shared_feed_forward_length (qwen2moe)
    bool expert_weights_norm = false; ///< renormalise the chosen experts' weights to sum 1
    qk_norm_kind qk_norm = qk_norm_kind::none;
    bool attn_bias = false;     ///< q/k/v projections carry biases (qwen2, qwen2moe)
    bool shared_expert = false; ///< a sigmoid-gated shared expert beside the routed ones (qwen2moe)
    gpt_oss_hparams gpt_oss;    ///< gpt-oss only
    hybrid_hparams hybrid;      ///< Gated DeltaNet hybrids only (its nextn_layers also counts glm4moe's MTP blocks)
    mla_hparams mla;            ///< deepseek2 only
    routing_hparams routing;    ///< deepseek2 and glm4moe (defaults elsewhere)

    [[nodiscard]] bool is_moe() const noexcept { return n_expert > 0; }
    /// Whether layer `il` routes to experts (a MoE model past its leading dense layers).
    [[nodiscard]] bool moe_layer(std::uint32_t il) const noexcept { return is_moe() && il >= routing.leading_dense; }
    [[nodiscard]] std::uint32_t q_dim() const noexcept { return n_head * head_dim; }
    [[nodiscard]] std::uint32_t kv_dim() const noexcept { return n_head_kv * head_dim; }
    [[nodiscard]] std::uint32_t v_dim() const noexcept { return n_head_kv * head_dim_v; }
};

/// Reads the generic keys of `arch` from `kv` (arch-specific defaults and checks are the arch hook's job).
/// `n_vocab` comes from `<arch>.vocab_size`, else the tokenizer's token count, else stays 0 for the loader
/// to take from token_embd. Errors name the key.
result<model_hparams> read_hparams(const gguf::metadata& kv, std::string_view arch);

/// Writes the keys `read_hparams` reads (for the converter and the model generator).
void write_hparams(const model_hparams& hp, gguf::metadata& kv);

/// Checks the shape is usable (non-zero sizes, head counts divide, experts used <= experts, even rope
/// dimensions within the head). The message names the offending key.
result<void> check_hparams(const model_hparams& hp);

} // namespace sluice::models
