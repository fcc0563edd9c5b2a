// The GGUF keys of the Gated DeltaNet hybrids (hybrid_hparams): the linear-attention geometry, the layer pattern,
// M-RoPE sections and the MTP block count, as llama.cpp's qwen35, qwen35moe and qwen3next files hold them.
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

namespace sluice::models {

/// Reads `<arch>.ssm.*`, `nextn_predict_layers` (taken off `hp.n_layer`, which then counts the main stack),
/// `attention.recurrent_layers` or `full_attention_interval` (default 4), and, when `sections`,
/// `rope.dimension_sections`. Checks every size against the others; errors name the key.
result<void> read_hybrid_hparams(const gguf::metadata& kv, model_hparams& hp, bool sections);

/// Writes the keys read_hybrid_hparams reads: full_attention_interval when the pattern has a period, else
/// attention.recurrent_layers.
void write_hybrid_hparams(const model_hparams& hp, gguf::metadata& kv);

/// The period p of a pattern in which layer l is full attention exactly when (l + 1) % p == 0, or 0 when it has none.
std::uint32_t full_attention_interval(const std::vector<bool>& recurrent) noexcept;

} // namespace sluice::models
