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

/// The hooks of one architecture.
struct architecture {
    std::string_view name; ///< general.architecture
    /// Fills arch-specific fields of `hp` (rope layout, norms, biases, expert options) after the generic
    /// keys were read, and checks what the architecture requires. Errors name the key.
    result<void> (*configure)(const gguf::metadata& kv, model_hparams& hp);
    /// The tensors a file of this architecture holds, in llama.cpp's order.
    std::vector<tensor_spec> (*tensors)(const model_hparams& hp);
    /// Runs decoder layer `layer` over the batch held by `ctx` (residual stream in, residual stream out) as
    /// one member `m` of the compute team. Returns false when a block stopped to wait for expert weights
    /// (see moe_block); the runner awaits them and calls the hook again for the same layer.
    bool (*forward_layer)(layer_context& ctx, std::uint32_t layer, const team_member& m);
};

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

} // namespace sluice::models
