// The gated delta rule of Gated DeltaNet linear attention (Qwen3.5, Qwen3-Next): a per-head matrix state updated
// token by token (the recurrent form, for decode) or a chunk at a time (the chunked form, for prefill). Both
// forms compute the same function; they differ only in rounding.
#pragma once

#include "kernels/isa.hpp"

#include <cstddef>

namespace sluice::kernels {

/// Which query/key head a value head reads when there are fewer key heads than value heads (r = n_heads /
/// n_k_heads). Hugging Face checkpoints (and llama.cpp's qwen3next files) keep the value heads of one key head
/// together: value head h reads key head h / r. llama.cpp's qwen35 / qwen35moe converter reorders the value
/// heads so that value head h reads key head h % n_k_heads.
enum class delta_head_order { grouped, tiled };

/// Shapes and strides (in floats) of one call. Token t, key head g of q starts at q + t*q_stride + g*dk (k alike
/// with k_stride); token t, value head h of v at v + t*v_stride + h*dv (out alike with out_stride); the decay g
/// and the update strength beta of token t, head h at g + t*gate_stride + h (beta alike).
/// The state of head h is a dk x dv row-major matrix at state + h*dk*dv.
struct delta_net_shape {
    std::size_t n_tokens = 1;
    std::size_t n_heads = 0;   ///< value heads, one state each
    std::size_t n_k_heads = 0; ///< query/key heads; divides n_heads
    delta_head_order order = delta_head_order::grouped;
    std::size_t dk = 0; ///< key (and query) head dimension
    std::size_t dv = 0; ///< value head dimension
    std::size_t q_stride = 0;
    std::size_t k_stride = 0;
    std::size_t v_stride = 0;
    std::size_t out_stride = 0;
    std::size_t gate_stride = 0;
    float q_scale = 1.0f; ///< multiplies every query (usually 1 / sqrt(dk))
};

/// The recurrent form. For each token t and head h, with q and k as given (callers L2-normalise them first):
///   S = exp(g_t) * S;  delta = beta_t * (v_t - S^T k_t);  S = S + k_t delta^T;  out_t = S^T (q_scale * q_t)
/// `state` is read and updated in place. Heads [head_begin, head_end) only; thread-safe for disjoint head
/// ranges. Costs two passes over each state per token.
void delta_net_recurrent(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                         isa_level isa = active_isa());

/// The chunked form of the same function: tokens are taken `chunk` at a time; within a chunk the updates are
/// condensed into triangular solves and matrix products, and the state is read and written once per chunk.
/// Same contract as delta_net_recurrent (chunk >= 1).
void delta_net_chunked(const delta_net_shape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, float* state, float* out, std::size_t head_begin, std::size_t head_end,
                       std::size_t chunk = 64, isa_level isa = active_isa());

} // namespace sluice::kernels
