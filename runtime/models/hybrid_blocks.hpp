// The mixers of the Gated DeltaNet hybrids (Qwen3.5, Qwen3.6, Qwen3-Next): a Gated DeltaNet linear-attention
// block and a gated full-attention block with partial multi-section RoPE. The math is in runtime/models/README.md.
#pragma once

#include "runtime/models/blocks.hpp"

#include <cstdint>

namespace sluice::models {

/// Pre-norm Gated DeltaNet: x += W_out (rms_norm(o) * w_norm * silu(z)), where o is the gated delta rule over the
/// L2-normalised q and k and the v of a causal convolution of W_qkv h, h = norm(x). The layer's recurrent state in
/// the sequence's cache (the convolution's last inputs, then one dk x dv matrix per value head) carries over.
void delta_net_block(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// Pre-norm gated attention: W_q yields a query and a gate per head; q and k get per-head RMSNorm and partial
/// multi-section RoPE; x += W_o (attn(q, K, V) * sigmoid(gate)). Keys and values go into the sequence's cache.
void gated_attention_block(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// Offsets of a linear-attention layer's state in its cache block: the convolution's history first.
struct delta_net_state_layout {
    std::uint64_t conv_floats; ///< (conv_kernel - 1) x conv channels
    std::uint64_t total;       ///< conv_floats + value heads x d x d
};
delta_net_state_layout delta_net_state_of(const hybrid_hparams& h) noexcept;

} // namespace sluice::models
