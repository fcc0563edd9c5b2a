// The DeepSeek-V3 / GLM-4.5 part of config.json parsing (internal to runtime/convert).
#pragma once

#include "runtime/convert/hf_config.hpp"
#include "runtime/convert/hf_fields.hpp"

namespace sluice::convert::detail {

/// For cfg.family deepseek2 or glm4moe, after the generic sizes were read: rope (default or YaRN, rope_theta in
/// rope_parameters), MLA ranks and the GGUF key/value view (deepseek2) or partial rotary and q/k norms (glm4moe),
/// routed/shared experts, groups, routing scale and score function, leading dense and NextN layer counts into
/// cfg.hp and cfg.moe_family. Errors name the field.
result<void> read_moe_family(const fields& f, hf_model_config& cfg);

/// quantization_config: absent, or fp8 (e4m3) with weight_block_size [rows, cols] into cfg.fp8_block.
result<void> read_quantization(const fields& f, hf_model_config& cfg);

} // namespace sluice::convert::detail
