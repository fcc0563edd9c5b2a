// The GGUF keys of DeepSeek-V3 / Kimi-K2 (deepseek2) and GLM-4.5 (glm4moe) beyond the generic ones: MLA ranks,
// expert routing (gating function, groups, scale), leading dense layers, shared experts and NextN layers, as
// llama.cpp's converter writes them (docs/DEEPSEEK_GLM.md lists them).
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

namespace sluice::models {

/// Reads `hp.routing` (expert_gating_func, expert_group_count/used_count, expert_weights_scale,
/// leading_dense_block_count, expert_shared_count, from which n_ff_shexp = n_ff_exp * count) and checks it against
/// the expert counts and block count. `default_sigmoid`: scoring when expert_gating_func is absent (glm4moe;
/// llama.cpp takes softmax for old deepseek2 files). Errors name the key.
result<void> read_routing_hparams(const gguf::metadata& kv, model_hparams& hp, bool default_sigmoid);

/// Reads `hp.mla` (attention.q_lora_rank, kv_lora_rank, key_length_mla, value_length_mla, yarn_log_multiplier)
/// and checks MLA's GGUF view: one KV head, key_length = kv_lora_rank + rope.dimension_count, value_length =
/// kv_lora_rank, key_length_mla > rope.dimension_count. Errors name the key.
result<void> read_mla_hparams(const gguf::metadata& kv, model_hparams& hp);

/// Reads nextn_predict_layers (glm4moe; deepseek2 files may have it too): taken off `hp.n_layer` into `hp.hybrid.nextn_layers`.
result<void> read_nextn_layers(const gguf::metadata& kv, model_hparams& hp);

/// Writes the keys the three readers read (for the converter and the model generator).
void write_moe_family_hparams(const model_hparams& hp, gguf::metadata& kv);

} // namespace sluice::models
