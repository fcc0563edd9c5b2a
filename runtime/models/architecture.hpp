// An architecture is a table entry with fixed hooks: hyperparameters, tensors, forward. One file per
// architecture in runtime/models/<name>.cpp defines its entry; `find_architecture` looks them up by the
// GGUF `general.architecture` name.
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/models/hparams.hpp"
#include "runtime/models/tensor_plan.hpp"
#include "sluice/error.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace sluice::models {

class layer_context;
struct team_member;
struct layer_status;
struct layer_cache_spec;

/// The hooks of one architecture.
struct architecture {
    std::string_view name; ///< general.architecture
    /// Fills arch-specific fields of `hp` (rope layout, norms, biases, expert options) after the generic
    /// keys were read, and checks what the architecture requires. Errors name the key.
    result<void> (*configure)(const gguf::metadata& kv, model_hparams& hp);
    /// The tensors a file of this architecture holds, in llama.cpp's order.
    std::vector<tensor_spec> (*tensors)(const model_hparams& hp);
    /// Runs decoder layer `layer` over the batch held by `ctx` (residual stream in, residual stream out) as
    /// one member `m` of the compute team. Every member returns the same status: done, or stalled on an expert
    /// fetch (see moe_block), in which case the runner awaits the fetch and calls the stall's resume step.
    layer_status (*forward_layer)(layer_context& ctx, std::uint32_t layer, const team_member& m);
    /// What each layer keeps per sequence (keys/values, a window of them, a recurrent state). Null: every layer
    /// is standard attention (attention_cache_layout).
    std::vector<layer_cache_spec> (*cache_layout)(const model_hparams& hp) = nullptr;
};

/// The per-layer cache layout of `arch` for `hp`.
std::vector<layer_cache_spec> cache_layout_of(const architecture& arch, const model_hparams& hp);

/// The architecture called `name`, or an error listing the supported ones.
result<const architecture*> find_architecture(std::string_view name);

/// Every supported architecture, in a fixed order.
std::span<const architecture* const> supported_architectures();

/// Reads `kv`'s architecture and hyperparameters, applies the arch hook and checks the result.
result<model_hparams> load_hparams(const gguf::metadata& kv, const architecture*& arch_out);

// The entries, one per file in runtime/models/.
const architecture& llama_architecture();
const architecture& qwen2_architecture();
const architecture& qwen3_architecture();
const architecture& qwen2moe_architecture();
const architecture& qwen3moe_architecture();
const architecture& olmoe_architecture();
const architecture& gpt_oss_architecture();
const architecture& qwen35moe_architecture();
const architecture& qwen35_architecture();
const architecture& qwen3next_architecture();
const architecture& deepseek2_architecture();
const architecture& glm4moe_architecture();

} // namespace sluice::models
