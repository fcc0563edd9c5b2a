// Multi-head latent attention as a decoder block (deepseek2): the latent cache, the plain form for multi-token
// batches whose context fits the scratch, the absorbed form otherwise (decode).
#pragma once

#include "runtime/models/blocks.hpp"

namespace sluice::models {

/// Pre-norm MLA: x += W_o · attn, with the latent and the rotary key of each token written to the cache
/// (kv_lora_rank + rope dims per position). A batch of more than one token whose visible positions fit
/// forward_scratch (at most max_batch) decompresses keys and values per head and attends plainly; every other
/// batch uses the absorbed form, which reads only the latent cache. Both give the same output (tested).
void mla_attention_block(layer_context& ctx, std::uint32_t layer, const team_member& m);

} // namespace sluice::models
