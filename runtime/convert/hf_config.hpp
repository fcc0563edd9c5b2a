// Mapping a Hugging Face config.json to the GGUF architecture and hyperparameters llama.cpp's converter writes.
#pragma once

#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::convert {

/// The Hugging Face model classes the converter knows (config.json `architectures[0]`).
enum class hf_family { llama, mixtral, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, deepseek2, glm4moe, gpt_oss };

/// YaRN rope scaling as config.json gives it (rope_scaling / rope_parameters with rope_type "yarn").
struct hf_yarn {
    float factor = 1.0f;
    std::uint32_t original_context = 0; ///< original_max_position_embeddings
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    float mscale = 0.0f;         ///< 0: absent
    float mscale_all_dim = 0.0f; ///< 0: absent (DeepSeek: the softmax scale gets yarn_mscale(factor, this)^2)
    std::optional<float> attention_factor;
    bool truncate = true;
};

/// The DeepSeek-V3 / Kimi-K2 (deepseek2) and GLM-4.5 (glm4moe) fields beyond model_hparams' generic ones.
struct hf_moe_family {
    // Multi-head latent attention (deepseek2 only; all 0 for glm4moe).
    std::uint32_t q_lora_rank = 0; ///< 0: a plain q_proj (DeepSeek-V2-Lite)
    std::uint32_t kv_lora_rank = 0;
    std::uint32_t qk_nope_head_dim = 0;
    std::uint32_t qk_rope_head_dim = 0;
    std::uint32_t v_head_dim = 0;
    // Routing.
    bool sigmoid_scores = true;    ///< scoring_func: sigmoid (V3, GLM) or softmax
    std::uint32_t n_groups = 1;    ///< n_group
    std::uint32_t groups_used = 1; ///< topk_group
    float routed_scale = 1.0f;     ///< routed_scaling_factor
    std::uint32_t n_shared_experts = 0;
    std::uint32_t leading_dense = 0; ///< first_k_dense_replace
    std::uint32_t nextn_layers = 0;  ///< num_nextn_predict_layers (tensors of layers past num_hidden_layers)
    bool qk_norm = false;            ///< use_qk_norm (glm4moe)
    std::optional<hf_yarn> yarn;
};

/// What config.json says, in GGUF terms.
struct hf_model_config {
    std::string hf_class; ///< "Qwen3MoeForCausalLM"
    hf_family family = hf_family::llama;
    models::model_hparams hp;           ///< generic fields; arch flags are left to the architecture's configure hook
    bool tied_embeddings = false;       ///< tie_word_embeddings: no output.weight
    std::optional<bool> norm_topk_prob; ///< written as <arch>.expert_weights_norm when present
    std::optional<hf_moe_family> moe_family;                ///< deepseek2 and glm4moe
    std::optional<std::array<std::uint32_t, 2>> fp8_block;  ///< quantization_config.weight_block_size (fp8)
    std::optional<std::array<std::uint32_t, 2>> packed_int; ///< compressed-tensors pack-quantized: bits, group size
    std::string tensor_prefix; ///< prepended to the usual tensor names ("language_model." for Kimi-K2.5)
};

/// Parses the text of config.json (for Kimi-K2.5, its text_config). Errors name the field: an unknown class, a
/// missing or mistyped size, rope_scaling other than linear and YaRN, inconsistent MLA ranks or
/// expert groups, a quantization other than FP8 blocks (gpt-oss: MXFP4), YaRN other than gpt-oss's unrounded one
/// for gpt-oss, and features the GGUF architecture cannot express (attention/MLP biases where the architecture has
/// none, sliding windows outside gpt-oss's alternating pattern, dense layers inside a Qwen MoE stack,
/// qkv clipping, partial rotary outside GLM, activations other than SiLU).
result<hf_model_config> parse_hf_config(std::string_view config_json);

} // namespace sluice::convert
