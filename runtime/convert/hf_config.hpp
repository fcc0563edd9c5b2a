// Mapping a Hugging Face config.json to the GGUF architecture and hyperparameters llama.cpp's converter writes.
#pragma once

#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::convert {

/// The Gated DeltaNet hybrids' geometry (qwen35moe, qwen35, qwen3next) in GGUF terms (`<arch>.ssm.*` and friends).
struct hf_hybrid_config {
    std::uint32_t conv_kernel = 0;                ///< ssm.conv_kernel (linear_conv_kernel_dim)
    std::uint32_t state_size = 0;                 ///< ssm.state_size: key = value head dimension
    std::uint32_t group_count = 0;                ///< ssm.group_count: key heads
    std::uint32_t time_step_rank = 0;             ///< ssm.time_step_rank: value heads
    std::uint32_t inner_size = 0;                 ///< ssm.inner_size: value heads x value head dimension
    std::vector<bool> recurrent;                  ///< per layer: linear attention (true) or full attention
    std::uint32_t full_attention_interval = 0;    ///< the period of `recurrent` when it has one, else 0
    std::array<std::uint32_t, 4> rope_sections{}; ///< rope.dimension_sections (qwen35, qwen35moe)
    std::uint32_t mtp_layers = 0;                 ///< mtp_num_hidden_layers (0 when the config does not say)
};

/// The Hugging Face model classes the converter knows (config.json `architectures[0]`).
enum class hf_family {
    llama,
    mixtral,
    qwen2,
    qwen3,
    qwen2moe,
    qwen3moe,
    olmoe,
    deepseek2,
    glm4moe,
    gpt_oss,
    qwen35moe,
    qwen35,
    qwen3next
};

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
    std::optional<hf_hybrid_config> hybrid;                 ///< qwen35moe, qwen35 and qwen3next
    std::optional<std::array<std::uint32_t, 2>> fp8_block;  ///< quantization_config.weight_block_size (fp8)
    std::optional<std::array<std::uint32_t, 2>> packed_int; ///< compressed-tensors pack-quantized: bits, group size
    std::string tensor_prefix; ///< prepended to the usual tensor names ("language_model." for Kimi-K2.5)
};

/// Parses the text of config.json (for Kimi-K2.5 and Qwen3.5's ...ForConditionalGeneration classes, its
/// text_config). transformers 4 and 5 spellings are accepted (num_experts or num_local_experts, rope_scaling or
/// rope_parameters, full_attention_interval or layer_types). Errors name the field: an unknown class, a
/// missing or mistyped size, rope_scaling other than linear and YaRN, inconsistent MLA ranks or
/// expert groups, a quantization other than FP8 blocks (gpt-oss: MXFP4), YaRN other than gpt-oss's unrounded one
/// for gpt-oss, and features the GGUF architecture cannot express (attention/MLP biases where the architecture has
/// none, sliding windows outside gpt-oss's alternating pattern, dense layers inside a Qwen MoE stack,
/// qkv clipping, partial rotary outside GLM and the hybrids, activations other than SiLU).
result<hf_model_config> parse_hf_config(std::string_view config_json);

} // namespace sluice::convert
