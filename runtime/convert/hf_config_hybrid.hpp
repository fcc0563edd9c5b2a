// The config.json fields of the Gated DeltaNet hybrids (Qwen3.5 MoE, Qwen3.5, Qwen3-Next): the linear-attention
// geometry, the layer pattern, partial rotary and M-RoPE sections, the MTP block count.
#pragma once

#include "runtime/convert/hf_config.hpp"

#include <boost/json/object.hpp>

namespace sluice::convert {

/// Reads the hybrid fields of `text` (the top level of a ...ForCausalLM config.json, or the text_config object of a
/// ...ForConditionalGeneration one) into `cfg.hybrid`, and the partial rotary dimension into cfg.hp.rope.n_rot.
/// Accepts both transformers 4 spellings (full_attention_interval, rope_scaling, top-level partial_rotary_factor)
/// and 5 ones (layer_types, rope_parameters). Errors name the field.
result<void> read_hybrid_config(const boost::json::object& text, hf_family family, hf_model_config& cfg);

/// True for the families read_hybrid_config handles.
bool is_hybrid_family(hf_family family) noexcept;

} // namespace sluice::convert
