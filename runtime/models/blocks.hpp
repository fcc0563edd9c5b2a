// The building blocks decoder layers are made of; architectures compose them in their forward hook.
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/models/forward.hpp"
#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

#include "runtime/compute/team.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::models {

class layer_context;

/// One member of the compute team running a forward pass. Every member runs the same blocks; they split
/// tokens, rows or heads between `sync()` points.
struct team_member {
    std::size_t index;
    std::size_t count;
    runtime::team_barrier& barrier;
    void sync() const noexcept { barrier.wait(); }
};

/// Pre-norm self-attention: x += W_o · attn(rope(norm(x) W_q), rope(norm(x) W_k), norm(x) W_v), with the
/// biases and q/k norms `hp` asks for; keys and values go into the sequence's KV cache.
void attention_block(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// Pre-norm SwiGLU feed-forward: x += W_down · (silu(h W_gate) * h W_up), h = norm(x).
void dense_ffn_block(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// Pre-norm mixture of experts: route each token to its top experts (softmax scores, optionally
/// renormalised), fetch them from the expert source (and prefetch the next MoE layer's predicted experts), run
/// them in chunks as they become ready, plus the sigmoid-gated shared expert when `hp.shared_expert`. Returns,
/// on every member, a stall on the fetch when experts it needs are still being read; the stall's resume step
/// (moe_resume) goes on from there. The MoE block must end its layer (nothing of the layer runs after it).
[[nodiscard]] layer_status moe_block(layer_context& ctx, std::uint32_t layer, const team_member& m);
/// The rest of a stalled moe_block.
[[nodiscard]] layer_status moe_resume(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// A pre-norm decoder layer: attention, then the MoE block when the model has experts, else the dense FFN.
/// The forward hook of every architecture built from the standard blocks.
[[nodiscard]] layer_status decoder_layer(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// Sets `hp.expert_weights_norm` to `fallback` unless the file says otherwise (`<arch>.expert_weights_norm`).
void default_expert_weights_norm(const gguf::metadata& kv, model_hparams& hp, bool fallback);

/// Error unless the model has routed experts.
result<void> require_experts(const model_hparams& hp);

} // namespace sluice::models
