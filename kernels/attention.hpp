// Grouped-query attention of float queries over an F16 key/value cache, decode and causal prefill.

#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// Shapes and strides (in elements) of one attention call. Query token t, head h starts at
/// q + t*q_token_stride + h*head_dim; output likewise in `out`. Key/value token j, kv head g starts at
/// k + j*kv_token_stride + g*kv_head_stride (same for v). Query head h reads kv head h / (n_heads / n_kv_heads).
struct attention_shape {
    std::size_t n_tokens = 1; ///< query tokens (1 for decode)
    std::size_t n_heads = 0;
    std::size_t n_kv_heads = 0; ///< divides n_heads
    std::size_t head_dim = 0;
    std::size_t kv_len = 0; ///< cached tokens visible to the last query token
    std::size_t q_token_stride = 0;
    std::size_t kv_token_stride = 0;
    std::size_t kv_head_stride = 0;
    std::size_t first_pos = 0; ///< cache position of query token 0; token t sees keys [0, first_pos + t]
    float scale = 1.0f;        ///< usually 1 / sqrt(head_dim)
};

/// out = softmax(scale * q k^T + causal mask) v for every query token and head, over F16 keys and values.
/// `head_begin`/`head_end` restrict the work to query heads in that range so threads can split heads.
/// Needs kv_len >= first_pos + n_tokens. Thread-safe for disjoint head ranges.
void attention_f16(const attention_shape& s, const float* q, const std::uint16_t* k, const std::uint16_t* v, float* out,
                   std::size_t head_begin, std::size_t head_end, isa_level isa = active_isa());

/// The same over a cache of `kv_type` elements (F16 or F32); strides stay in elements.
void attention(const attention_shape& s, quant_type kv_type, const float* q, const void* k, const void* v, float* out,
               std::size_t head_begin, std::size_t head_end, isa_level isa = active_isa());

} // namespace sluice::kernels
