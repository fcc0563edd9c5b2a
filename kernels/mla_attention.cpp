// MLA over a latent cache. Scores go through the cache format's dot kernel (the rotary key, or the whole row in the
// absorbed form), softmax is the stable two-pass one, and the absorbed form reads each cache row once per
// position for all of a thread's heads (MQA-style), since every head shares it.
#include "kernels/mla_attention.hpp"

#include "kernels/quant.hpp"

#include "kernels/cpu/axpy.hpp"
#include "kernels/cpu/format_kernels.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace sluice::kernels {

namespace {

// Stable in-place softmax of n scores.
void softmax_in_place(float* sc, std::size_t n) {
    float max = -INFINITY;
    for (std::size_t j = 0; j < n; ++j) {
        max = std::max(max, sc[j]);
    }
    float sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
        sc[j] = std::exp(sc[j] - max);
        sum += sc[j];
    }
    const float inv = 1.0f / sum;
    for (std::size_t j = 0; j < n; ++j) {
        sc[j] *= inv;
    }
}

const format_kernels& cache_kernels(quant_type type, isa_level isa) {
    assert(type == quant_type::f16 || type == quant_type::f32);
    return *find_format_kernels(std::min(isa, detect_isa()), type);
}

std::size_t elem_size(quant_type type) {
    return type == quant_type::f16 ? 2 : 4;
}

} // namespace

void mla_attention_plain(const mla_shape& s, quant_type cache_type, const float* q, const float* k_nope, const float* v,
                         const void* cache, float* out, std::size_t head_begin, std::size_t head_end, isa_level isa) {
    assert(s.kv_len >= s.first_pos + s.n_tokens && s.cache_stride >= s.rank + s.rope_dim);
    const format_kernels& kv = cache_kernels(cache_type, isa);
    const format_kernels& f32 = cache_kernels(quant_type::f32, isa);
    const axpy_fn axpy = axpy_kernel(isa);
    const auto* rows = static_cast<const std::byte*>(cache);
    const std::size_t elem = elem_size(cache_type);
    const std::size_t qk = s.nope_dim + s.rope_dim;
    thread_local std::vector<float> score;
    score.resize(std::max(score.size(), s.kv_len));
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        const std::size_t visible = s.first_pos + t + 1;
        for (std::size_t h = head_begin; h < head_end; ++h) {
            const float* qh = q + (t * s.n_heads + h) * qk;
            for (std::size_t j = 0; j < visible; ++j) {
                const float* kh = k_nope + (j * s.n_heads + h) * s.nope_dim;
                float d = f32.dot(s.nope_dim, kh, qh);
                d += kv.dot(s.rope_dim, rows + (j * s.cache_stride + s.rank) * elem, qh + s.nope_dim);
                score[j] = s.scale * d;
            }
            softmax_in_place(score.data(), visible);
            float* o = out + (t * s.n_heads + h) * s.v_dim;
            std::fill(o, o + s.v_dim, 0.0f);
            for (std::size_t j = 0; j < visible; ++j) {
                axpy(s.v_dim, score[j], v + (j * s.n_heads + h) * s.v_dim, o);
            }
        }
    }
}

void mla_decompress(const mla_shape& s, quant_type weight_type, const void* k_b, const void* v_b, quant_type cache_type,
                    const void* cache, std::size_t n_pos, float* k_nope, float* v, std::size_t head_begin,
                    std::size_t head_end, isa_level isa) {
    if (head_begin >= head_end || n_pos == 0) {
        return;
    }
    const format_kernels& f32 = cache_kernels(quant_type::f32, isa);
    const format_kernels& kv = cache_kernels(cache_type, isa);
    const auto* rows = static_cast<const std::byte*>(cache);
    const std::size_t elem = elem_size(cache_type);
    const std::size_t kb_row = *row_bytes(weight_type, s.nope_dim);
    const std::size_t vb_row = *row_bytes(weight_type, s.rank);
    // Latents of every position in floats, then one head at a time: W_kb,h transposed to nope_dim rows of rank
    // values (so each key value is one dot over the latent) and W_vb,h as it is.
    thread_local std::vector<float> latent, kt, rowbuf, vb;
    latent.resize(std::max(latent.size(), n_pos * s.rank));
    kt.resize(std::max(kt.size(), s.nope_dim * s.rank));
    rowbuf.resize(std::max(rowbuf.size(), s.nope_dim));
    vb.resize(std::max(vb.size(), s.v_dim * s.rank));
    for (std::size_t j = 0; j < n_pos; ++j) {
        kv.dequantize(rows + j * s.cache_stride * elem, latent.data() + j * s.rank, s.rank);
    }
    const auto* kb = static_cast<const std::byte*>(k_b);
    const auto* vbw = static_cast<const std::byte*>(v_b);
    for (std::size_t h = head_begin; h < head_end; ++h) {
        for (std::size_t r = 0; r < s.rank; ++r) {
            dequantize_row(weight_type, kb + (h * s.rank + r) * kb_row, rowbuf.data(), s.nope_dim, isa);
            for (std::size_t d = 0; d < s.nope_dim; ++d) {
                kt[d * s.rank + r] = rowbuf[d];
            }
        }
        for (std::size_t e = 0; e < s.v_dim; ++e) {
            dequantize_row(weight_type, vbw + (h * s.v_dim + e) * vb_row, vb.data() + e * s.rank, s.rank, isa);
        }
        for (std::size_t j = 0; j < n_pos; ++j) {
            const float* c = latent.data() + j * s.rank;
            float* kh = k_nope + (j * s.n_heads + h) * s.nope_dim;
            for (std::size_t d = 0; d < s.nope_dim; ++d) {
                kh[d] = f32.dot(s.rank, kt.data() + d * s.rank, c);
            }
            float* vh = v + (j * s.n_heads + h) * s.v_dim;
            for (std::size_t e = 0; e < s.v_dim; ++e) {
                vh[e] = f32.dot(s.rank, vb.data() + e * s.rank, c);
            }
        }
    }
}

void mla_attention_absorbed(const mla_shape& s, quant_type cache_type, const float* q, const void* cache, float* out,
                            std::size_t head_begin, std::size_t head_end, isa_level isa) {
    assert(s.kv_len >= s.first_pos + s.n_tokens && s.cache_stride >= s.rank + s.rope_dim);
    if (head_begin >= head_end) {
        return;
    }
    const format_kernels& kv = cache_kernels(cache_type, isa);
    const axpy_fn axpy = axpy_kernel(isa);
    const auto* rows = static_cast<const std::byte*>(cache);
    const std::size_t elem = elem_size(cache_type);
    const std::size_t width = s.rank + s.rope_dim;
    const std::size_t heads = head_end - head_begin;
    // Scores of this thread's heads [head][position], and one latent row in floats.
    thread_local std::vector<float> score;
    thread_local std::vector<float> latent;
    score.resize(std::max(score.size(), heads * s.kv_len));
    latent.resize(std::max(latent.size(), s.rank));
    for (std::size_t t = 0; t < s.n_tokens; ++t) {
        const std::size_t visible = s.first_pos + t + 1;
        const float* qt = q + t * s.n_heads * width;
        // Scores: each cache row once, against every head (it stays in L1 across them).
        for (std::size_t j = 0; j < visible; ++j) {
            const std::byte* row = rows + j * s.cache_stride * elem;
            for (std::size_t h = head_begin; h < head_end; ++h) {
                score[(h - head_begin) * visible + j] = s.scale * kv.dot(width, row, qt + h * width);
            }
        }
        for (std::size_t h = 0; h < heads; ++h) {
            softmax_in_place(score.data() + h * visible, visible);
        }
        // Weighted sum of latents: each row dequantized once, added into every head's output.
        float* ot = out + t * s.n_heads * s.rank;
        std::fill(ot + head_begin * s.rank, ot + head_end * s.rank, 0.0f);
        for (std::size_t j = 0; j < visible; ++j) {
            kv.dequantize(rows + j * s.cache_stride * elem, latent.data(), s.rank);
            for (std::size_t h = head_begin; h < head_end; ++h) {
                axpy(s.rank, score[(h - head_begin) * visible + j], latent.data(), ot + h * s.rank);
            }
        }
    }
}

} // namespace sluice::kernels
