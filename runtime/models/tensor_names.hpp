// The one table of tensor names: every tensor an architecture may hold, by what it is in the decoder, with its
// GGUF (llama.cpp) name. The loader, the expert layout, the planner, the converter and the model generator all
// spell names through it, so a new tensor is one row here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::models {

/// What a tensor is in the model. Per-layer kinds live under "blk.<layer>."; the others are global.
enum class tensor_kind : std::uint8_t {
    // global
    token_embd,
    output_norm,
    output,
    // attention
    attn_norm,
    attn_q,
    attn_k,
    attn_v,
    attn_output,
    attn_q_norm,
    attn_k_norm,
    // dense feed-forward
    ffn_norm,
    ffn_gate,
    ffn_up,
    ffn_down,
    // routed experts
    ffn_gate_inp,
    ffn_gate_exps,
    ffn_up_exps,
    ffn_down_exps,
    // shared expert
    ffn_gate_inp_shexp,
    ffn_gate_shexp,
    ffn_up_shexp,
    ffn_down_shexp,
    // gpt-oss
    attn_sinks,     ///< per-head sink logits
    attn_post_norm, ///< the norm before the FFN or MoE block ("post_attention_norm"; also the hybrids')
    // Gated DeltaNet hybrids (qwen35moe, qwen35, qwen3next)
    attn_qkv,  ///< fused q, k, v projection of a linear-attention layer
    attn_gate, ///< its output gate (z)
    ssm_conv1d,
    ssm_dt,    ///< its ".bias" is the decay bias
    ssm_a,     ///< "blk.N.ssm_a", no suffix: -exp(A_log)
    ssm_alpha, ///< decay projection
    ssm_beta,  ///< update-strength projection
    ssm_ba,    ///< both, fused per key head (qwen3next)
    ssm_norm,
    ssm_out,
    nextn_eh_proj, ///< multi-token prediction (MTP) block
    nextn_enorm,
    nextn_hnorm,
    nextn_shared_head_norm,
    nextn_embed_tokens,
    nextn_shared_head_head,
    // DeepSeek-V3 / Kimi-K2 multi-head latent attention (deepseek2) and sigmoid routing (deepseek2, glm4moe)
    attn_q_a,      ///< low-rank query down-projection
    attn_q_a_norm, ///< its RMSNorm
    attn_q_b,      ///< query up-projection: per head the non-rotary then the rotary part
    attn_kv_a_mqa, ///< latent and rotary key: kv_lora_rank + rope dims rows
    attn_kv_a_norm,
    attn_k_b,    ///< key decompression, per head kv_lora_rank rows of nope dims (3-D)
    attn_v_b,    ///< value decompression, per head v dims rows of kv_lora_rank (3-D)
    exp_probs_b, ///< ".bias": the experts' selection bias (e_score_correction_bias)
    count
};

/// Which tensor of a kind: the weight or the bias (`none` for the few kinds llama.cpp names without a suffix).
enum class tensor_suffix : std::uint8_t { weight, bias, none };

/// The GGUF base name of a kind ("attn_q", "token_embd").
std::string_view base_name(tensor_kind kind) noexcept;
/// Whether a kind lives in the repeated blocks ("blk.<layer>.").
bool is_layer_kind(tensor_kind kind) noexcept;
/// "weight" or "bias" ("" for none).
std::string_view suffix_name(tensor_suffix suffix) noexcept;
/// Whether a kind's tensor has no suffix ("blk.N.ssm_a"); tensor_name then ignores the suffix given.
bool is_bare_kind(tensor_kind kind) noexcept;

/// The full GGUF name of a global tensor ("output_norm.weight").
std::string tensor_name(tensor_kind kind, tensor_suffix suffix = tensor_suffix::weight);
/// The full GGUF name of a layer's tensor ("blk.3.attn_q.bias").
std::string tensor_name(tensor_kind kind, std::uint32_t layer, tensor_suffix suffix = tensor_suffix::weight);

/// The kind whose base name is `base`, if any.
std::optional<tensor_kind> find_tensor_kind(std::string_view base) noexcept;

/// A full GGUF tensor name taken apart.
struct parsed_tensor_name {
    tensor_kind kind;
    tensor_suffix suffix;
    std::optional<std::uint32_t> layer; ///< for per-layer kinds
};

/// Parses "blk.3.attn_q.bias" or "output_norm.weight"; nullopt for a name outside the table.
std::optional<parsed_tensor_name> parse_tensor_name(std::string_view name) noexcept;

} // namespace sluice::models
