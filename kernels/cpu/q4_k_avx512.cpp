// AVX-512 (BW + VNNI) kernels for Q4_K weights against Q8_K activations.
//
// Super-blocks go in pairs: the two 12-byte scale fields are unpacked together in registers (one per 128-bit
// lane) and the two minimum terms are one 512-bit multiply-add, which halves the per-super-block bookkeeping
// that dominated this kernel (docs/PERFORMANCE.md, "Q4_K: what its kernel spends"). Each 32-byte nibble run is
// broadcast to both halves of a register and its high nibbles shifted down in the upper half only, so values
// 64c..64c+63 line up with 64 contiguous activation bytes.
#include "kernels/cpu/k_pairs_avx512.hpp"
#include "kernels/cpu/simd_kernels.hpp"

namespace sluice::kernels::avx512 {

// Blocks b and b+1 share their bookkeeping; a lone last block is paired with itself and its twin's minimum lanes
// are zero. The float steps are those of dot4_q4_k, so both give bit-identical results.
float dot_q4_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    __m512 acc = _mm512_setzero_ps();
    __m512 acc_m = _mm512_setzero_ps();
    std::size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i words = pair_words(x[b], x[b + 1]);
        acc_m = _mm512_fmadd_ps(join_ps(y[b].d * half(x[b].dmin), y[b + 1].d * half(x[b + 1].dmin)),
                                _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(y[b]), bsums(y[b + 1]))), acc_m);
        for (int h = 0; h < 2; ++h) {
            const __m512i q[4] = {nibble_chunk(x[b + h].qs, 0), nibble_chunk(x[b + h].qs, 1),
                                  nibble_chunk(x[b + h].qs, 2), nibble_chunk(x[b + h].qs, 3)};
            const __m512i sumi = block_sumi(q, words, ix.idx + 4 * h, y[b + h].qs);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b + h].d * half(x[b + h].d)), _mm512_cvtepi32_ps(sumi), acc);
        }
    }
    if (b < nb) {
        const __m512i words = pair_words(x[b], x[b]);
        acc_m = _mm512_fmadd_ps(join_ps(y[b].d * half(x[b].dmin), 0.0f),
                                _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(y[b]), _mm256_setzero_si256())), acc_m);
        const __m512i q[4] = {nibble_chunk(x[b].qs, 0), nibble_chunk(x[b].qs, 1), nibble_chunk(x[b].qs, 2),
                              nibble_chunk(x[b].qs, 3)};
        const __m512i sumi = block_sumi(q, words, ix.idx, y[b].qs);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(acc_m);
}

void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    __m512 acc[4], acc_m[4];
    for (int t = 0; t < 4; ++t) {
        acc[t] = acc_m[t] = _mm512_setzero_ps();
    }
    for (std::size_t b = 0; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        const int n_h = pair ? 2 : 1;
        // Weight side once for the four tokens: scale words and the nibble values of both blocks.
        const __m512i words = pair_words(x[b], x[pair ? b + 1 : b]);
        __m512i q[2][4];
        for (int h = 0; h < n_h; ++h) {
            for (int c = 0; c < 4; ++c) {
                q[h][c] = nibble_chunk(x[b + h].qs, c);
            }
        }
        const float dmin0 = half(x[b].dmin), dmin1 = pair ? half(x[b + 1].dmin) : 0.0f;
        for (int t = 0; t < 4; ++t) {
            const block_q8_k* yt = y[t];
            const __m256i bs1 = pair ? bsums(yt[b + 1]) : _mm256_setzero_si256();
            acc_m[t] = _mm512_fmadd_ps(join_ps(yt[b].d * dmin0, pair ? yt[b + 1].d * dmin1 : 0.0f),
                                       _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(yt[b]), bs1)), acc_m[t]);
            for (int h = 0; h < n_h; ++h) {
                const __m512i sumi = block_sumi(q[h], words, ix.idx + 4 * h, yt[b + h].qs);
                acc[t] =
                    _mm512_fmadd_ps(_mm512_set1_ps(yt[b + h].d * half(x[b + h].d)), _mm512_cvtepi32_ps(sumi), acc[t]);
            }
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(acc[t]) - _mm512_reduce_add_ps(acc_m[t]);
    }
}

} // namespace sluice::kernels::avx512
