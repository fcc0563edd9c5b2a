// GQA attention: per query head, scores through the cache format's dot kernel (F16 or F32), a stable softmax (with
// the head's sink logit in the denominator when there is one), then a weighted sum of value rows dequantized through
// the same format's kernel. A sliding window limits the positions each token sees; a ring maps positions to rows.
#include "kernels/attention.hpp"

#include "kernels/cpu/format_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace sluice::kernels {

void attention_f16(const attention_shape& s, const float* q, const std::uint16_t* k, const std::uint16_t* v, float* out,
                   std::size_t head_begin, std::size_t head_end, isa_level isa) {
    attention(s, quant_type::f16, q, k, v, out, head_begin, head_end, isa);
}

namespace {

/// The first position query position `pos` sees.
std::size_t first_visible(const attention_shape& s, std::size_t pos) {
    return s.window == 0 || pos + 1 < s.window ? 0 : pos + 1 - s.window;
}

/// The cache row holding position `pos`.
std::size_t row_of(const attention_shape& s, std::size_t pos) {
    return s.kv_rows == 0 ? pos : pos % s.kv_rows;
}

} // namespace

void attention(const attention_shape& s, quant_type kv_type, const float* q, const void* k_cache, const void* v_cache,
               float* out, std::size_t head_begin, std::size_t head_end, isa_level isa) {
    assert(s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0 && s.kv_len >= s.first_pos + s.n_tokens);
    assert(s.kv_rows == 0 || (s.window > 0 && s.kv_rows >= s.window + s.n_tokens - 1));
    assert(kv_type == quant_type::f16 || kv_type == quant_type::f32);
    const format_kernels& kv = *find_format_kernels(std::min(isa, detect_isa()), kv_type);
    const std::size_t elem = kv_type == quant_type::f16 ? 2 : 4;
    const auto* k = static_cast<const std::byte*>(k_cache);
    const auto* v = static_cast<const std::byte*>(v_cache);
    const std::size_t group = s.n_heads / s.n_kv_heads;
    // Per-thread scratch that only grows: attention runs on compute threads many times per token.
    thread_local std::vector<float> score;
    thread_local std::vector<float> v_row;
    score.resize(std::max(score.size(), s.kv_len));
    v_row.resize(std::max(v_row.size(), s.head_dim));
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        const std::size_t pos = s.first_pos + t;
        const std::size_t lo = first_visible(s, pos);
        const std::size_t visible = pos + 1 - lo;
        for (std::size_t h = head_begin; h < head_end; ++h) {
            const float* qh = q + t * s.q_token_stride + h * s.head_dim;
            const std::size_t kv_off = (h / group) * s.kv_head_stride;
            // Scores and their maximum (the sink takes part in the maximum and the sum, not the values).
            float max = s.sinks != nullptr ? s.sinks[h] : -INFINITY;
            for (std::size_t j = 0; j < visible; ++j) {
                const std::size_t row = row_of(s, lo + j);
                score[j] = s.scale * kv.dot(s.head_dim, k + (row * s.kv_token_stride + kv_off) * elem, qh);
                max = std::max(max, score[j]);
            }
            float sum = s.sinks != nullptr ? std::exp(s.sinks[h] - max) : 0.0f;
            for (std::size_t j = 0; j < visible; ++j) {
                score[j] = std::exp(score[j] - max);
                sum += score[j];
            }
            // Weighted sum of values.
            float* o = out + t * s.q_token_stride + h * s.head_dim;
            std::fill(o, o + s.head_dim, 0.0f);
            for (std::size_t j = 0; j < visible; ++j) {
                const std::size_t row = row_of(s, lo + j);
                kv.dequantize(v + (row * s.kv_token_stride + kv_off) * elem, v_row.data(), s.head_dim);
                const float p = score[j];
                for (std::size_t d = 0; d < s.head_dim; ++d) {
                    o[d] += p * v_row[d];
                }
            }
            const float inv = 1.0f / sum;
            for (std::size_t d = 0; d < s.head_dim; ++d) {
                o[d] *= inv;
            }
        }
    }
}

} // namespace sluice::kernels
