// AVX-512 (BW + VNNI) kernel for Q5_K weights against Q8_K activations: Q4_K's scheme plus the fifth bit.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/k_scales.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// 32 x int16 lanes: the first 16 hold `a`, the last 16 hold `b`.
inline __m512i halves16(short a, short b) {
    return join(_mm256_set1_epi16(a), _mm256_set1_epi16(b));
}

} // namespace

float dot_q5_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const __m512i low_mask = _mm512_set1_epi8(0x0f);
    const __m512i one = _mm512_set1_epi8(1);
    // Step k covers chunks 2k and 2k+1: low nibbles are groups 4k and 4k+2, high nibbles 4k+1 and 4k+3.
    // The same indices pick the scales and the qh bit of each group.
    const __m512i group[4] = {halves16(0, 2), halves16(1, 3), halves16(4, 6), halves16(5, 7)};
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const __m256i sm16 = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sm)));
        const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums + 8)));
        const __m128i mprod = _mm_madd_epi16(_mm256_extracti128_si256(sm16, 1), bs);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(y[b].d * half(x[b].dmin)), _mm_cvtepi32_ps(mprod), acc_m);
        const __m512i scales = _mm512_castsi256_si512(sm16);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qh));
        const __m512i qh2 = join(qh, qh);
        __m512i sumi = _mm512_setzero_si512();
        for (int k = 0; k < 2; ++k) {
            const __m512i raw = _mm512_loadu_si512(x[b].qs + 64 * k);
            const __m512i h_lo = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh2, group[2 * k]), one), 4);
            const __m512i h_hi = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh2, group[2 * k + 1]), one), 4);
            const __m512i lo = _mm512_or_si512(_mm512_and_si512(raw, low_mask), h_lo);
            const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask), h_hi);
            const std::int8_t* q8 = y[b].qs + 128 * k;
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(lo, load_2x32(q8, q8 + 64)),
                                       _mm512_permutexvar_epi16(group[2 * k], scales));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(hi, load_2x32(q8 + 32, q8 + 96)),
                                       _mm512_permutexvar_epi16(group[2 * k + 1], scales));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(_mm512_zextps128_ps512(acc_m));
}

} // namespace sluice::kernels::avx512
