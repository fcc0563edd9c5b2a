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

/// The Hugging Face model classes the converter knows (config.json `architectures[0]`).
enum class hf_family { llama, mixtral, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, qwen35moe, qwen35, qwen3next };

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

/// What config.json says, in GGUF terms.
struct hf_model_config {
    std::string hf_class; ///< "Qwen3MoeForCausalLM"
    hf_family family = hf_family::llama;
    models::model_hparams hp;           ///< generic fields; arch flags are left to the architecture's configure hook
    bool tied_embeddings = false;       ///< tie_word_embeddings: no output.weight
    std::optional<bool> norm_topk_prob; ///< written as <arch>.expert_weights_norm when present
    std::optional<hf_hybrid_config> hybrid; ///< the hybrid families' fields
};

/// Parses the text of config.json. For ...ForConditionalGeneration classes the model's fields are read from its
/// text_config object. Both transformers 4 and 5 spellings are accepted (num_experts or num_local_experts,
/// rope_scaling or rope_parameters, full_attention_interval or layer_types). Errors name the field: an unknown class, a
/// missing or mistyped size, rope_scaling other than linear, and features the GGUF architecture cannot express
/// (attention/MLP biases where the architecture has none, sliding windows, dense layers inside a MoE stack, qkv
/// clipping, partial rotary, activations other than SiLU).
result<hf_model_config> parse_hf_config(std::string_view config_json);

} // namespace sluice::convert
