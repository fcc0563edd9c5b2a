// Mapping a Hugging Face config.json to the GGUF architecture and hyperparameters llama.cpp's converter writes.
#pragma once

#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace sluice::convert {

/// The Hugging Face model classes the converter knows (config.json `architectures[0]`).
enum class hf_family { llama, mixtral, qwen2, qwen3, qwen2moe, qwen3moe, olmoe };

/// What config.json says, in GGUF terms.
struct hf_model_config {
    std::string hf_class; ///< "Qwen3MoeForCausalLM"
    hf_family family = hf_family::llama;
    models::model_hparams hp;           ///< generic fields; arch flags are left to the architecture's configure hook
    bool tied_embeddings = false;       ///< tie_word_embeddings: no output.weight
    std::optional<bool> norm_topk_prob; ///< written as <arch>.expert_weights_norm when present
};

/// Parses the text of config.json. Errors name the field: an unknown class, a missing or mistyped size,
/// rope_scaling other than linear, and features the GGUF architecture cannot express (attention/MLP biases
/// where the architecture has none, sliding windows, dense layers inside a MoE stack, qkv clipping, partial
/// rotary, activations other than SiLU).
result<hf_model_config> parse_hf_config(std::string_view config_json);

} // namespace sluice::convert
