// AVX-512 (BW + VNNI) kernel for Q5_K weights against Q8_K activations: Q4_K's paired scheme
// (k_pairs_avx512.hpp) plus the fifth bit of each value, added from qh under a byte mask.
#include "kernels/cpu/k_pairs_avx512.hpp"
#include "kernels/cpu/simd_kernels.hpp"

namespace sluice::kernels::avx512 {
namespace {

/// Chunk c (values 64c..64c+63) of a super-block as 64 five-bit values in activation order: the nibbles as in
/// Q4_K, plus 16 where bit 2c (values 64c..64c+31) or bit 2c+1 (the next 32) of qh[i] is set.
inline __m512i chunk_values(const block_q5_k& x, __m512i qh2, int c) {
    const __m512i q = nibble_chunk(x.qs, c);
    const __m512i bit =
        join(_mm256_set1_epi8(static_cast<char>(1 << (2 * c))), _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1))));
    return _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(qh2, bit), q, _mm512_set1_epi8(16));
}

/// The block's 32 qh bytes in both halves of a register.
inline __m512i qh_both(const block_q5_k& x) {
    return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh)));
}

/// Integer sum of one block of a pair (h = 0 or 1) against its activations.
inline __m512i q5_block_sumi(const block_q5_k& x, const __m512i* idx, __m512i words, const std::int8_t* q8) {
    const __m512i qh2 = qh_both(x);
    const __m512i q[4] = {chunk_values(x, qh2, 0), chunk_values(x, qh2, 1), chunk_values(x, qh2, 2),
                          chunk_values(x, qh2, 3)};
    return block_sumi(q, words, idx, q8);
}

} // namespace

float dot_q5_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_k*>(w);
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
            const __m512i sumi = q5_block_sumi(x[b + h], ix.idx + 4 * h, words, y[b + h].qs);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b + h].d * half(x[b + h].d)), _mm512_cvtepi32_ps(sumi), acc);
        }
    }
    if (b < nb) {
        // A lone last block, paired with itself; its twin's minimum lanes are zero.
        const __m512i words = pair_words(x[b], x[b]);
        acc_m = _mm512_fmadd_ps(join_ps(y[b].d * half(x[b].dmin), 0.0f),
                                _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(y[b]), _mm256_setzero_si256())), acc_m);
        const __m512i sumi = q5_block_sumi(x[b], ix.idx, words, y[b].qs);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(acc_m);
}

} // namespace sluice::kernels::avx512
