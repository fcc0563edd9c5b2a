// Grouped-query attention of float queries over an F16 key/value cache, decode and causal prefill, with optional
// sliding windows over a ring of cache rows and per-head attention sinks.

#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// Shapes and strides (in elements) of one attention call. Query token t, head h starts at
/// q + t*q_token_stride + h*head_dim; output likewise in `out`. The key/value of position j, kv head g starts at
/// k + row(j)*kv_token_stride + g*kv_head_stride (same for v), where row(j) = j, or j % kv_rows for a ring.
/// Query head h reads kv head h / (n_heads / n_kv_heads).
///
/// Query token t sits at position p = first_pos + t and sees positions [0, p], or (p - window, p] with a window
/// (as transformers' sliding-window mask and llama.cpp's standard SWA: `window` positions including its own).
/// A windowed layer's cache can be a ring of kv_rows >= window + n_tokens - 1 rows, so writing a batch's keys
/// never overwrites one an earlier token of the batch still sees.
struct attention_shape {
    std::size_t n_tokens = 1; ///< query tokens (1 for decode)
    std::size_t n_heads = 0;
    std::size_t n_kv_heads = 0; ///< divides n_heads
    std::size_t head_dim = 0;
    std::size_t kv_len = 0; ///< positions cached (first_pos + n_tokens for causal attention)
    std::size_t q_token_stride = 0;
    std::size_t kv_token_stride = 0;
    std::size_t kv_head_stride = 0;
    std::size_t first_pos = 0;    ///< cache position of query token 0; token t sees keys [0, first_pos + t]
    float scale = 1.0f;           ///< usually 1 / sqrt(head_dim)
    std::size_t window = 0;       ///< sliding window in positions (0: none)
    std::size_t kv_rows = 0;      ///< rows of a ring cache (0: row j holds position j)
    const float* sinks = nullptr; ///< per query head, a logit that joins the softmax denominator only (gpt-oss)
};

/// out = softmax(scale * q k^T + mask) v for every query token and head, over F16 keys and values; with sinks,
/// out = sum_j exp(s_j) v_j / (sum_j exp(s_j) + exp(sink_h)). `head_begin`/`head_end` restrict the work to query
/// heads in that range so threads can split heads. Needs kv_len >= first_pos + n_tokens, and for a ring
/// kv_rows >= window + n_tokens - 1 (window > 0). Thread-safe for disjoint head ranges.
void attention_f16(const attention_shape& s, const float* q, const std::uint16_t* k, const std::uint16_t* v, float* out,
                   std::size_t head_begin, std::size_t head_end, isa_level isa = active_isa());

/// The same over a cache of `kv_type` elements (F16 or F32); strides stay in elements.
void attention(const attention_shape& s, quant_type kv_type, const float* q, const void* k, const void* v, float* out,
               std::size_t head_begin, std::size_t head_end, isa_level isa = active_isa());

} // namespace sluice::kernels
