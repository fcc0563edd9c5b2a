// AVX-512 (BW + VNNI) kernel for Q4_K weights against Q8_K activations: two 64-value chunks per step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/k_scales.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Index vector for permutexvar_epi16: lanes 0..15 pick scale `a`, lanes 16..31 pick scale `b`.
inline __m512i pick2(short a, short b) {
    return join(_mm256_set1_epi16(a), _mm256_set1_epi16(b));
}

} // namespace

float dot_q4_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const __m512i low_mask = _mm512_set1_epi8(0x0f);
    // 64 q4 bytes = chunks c and c+1; low nibbles are groups 2c and 2c+2, high nibbles 2c+1 and 2c+3.
    const __m512i idx[4] = {pick2(0, 2), pick2(1, 3), pick2(4, 6), pick2(5, 7)};
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const std::int8_t* q8 = y[b].qs;
        const __m512i a[4] = {load_2x32(q8, q8 + 64), load_2x32(q8 + 32, q8 + 96), load_2x32(q8 + 128, q8 + 192),
                              load_2x32(q8 + 160, q8 + 224)};
        const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums + 8)));
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const __m256i sm16 = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sm)));
        // Mins: m[g] * (bsum[2g] + bsum[2g+1]), scaled by d8 * dmin and subtracted at the end.
        const __m128i mprod = _mm_madd_epi16(_mm256_extracti128_si256(sm16, 1), bs);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(y[b].d * half(x[b].dmin)), _mm_cvtepi32_ps(mprod), acc_m);
        const __m512i scales = _mm512_castsi256_si512(sm16);
        __m512i sumi = _mm512_setzero_si512();
        for (int c = 0; c < 2; ++c) {
            const __m512i raw = _mm512_loadu_si512(x[b].qs + 64 * c);
            const __m512i lo = _mm512_and_si512(raw, low_mask);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(lo, a[2 * c]),
                                       _mm512_permutexvar_epi16(idx[2 * c], scales));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(hi, a[2 * c + 1]),
                                       _mm512_permutexvar_epi16(idx[2 * c + 1], scales));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(_mm512_zextps128_ps512(acc_m));
}

void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const __m512i low_mask = _mm512_set1_epi8(0x0f);
    const __m512i idx[4] = {pick2(0, 2), pick2(1, 3), pick2(4, 6), pick2(5, 7)};
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    __m128 acc_m[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        // Weight side once per super-block: scales, mins and the four nibble vectors.
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const __m256i sm16 = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sm)));
        const __m128i mins = _mm256_extracti128_si256(sm16, 1);
        const __m512i scales = _mm512_castsi256_si512(sm16);
        __m512i q[4], s[4];
        for (int c = 0; c < 2; ++c) {
            const __m512i raw = _mm512_loadu_si512(x[b].qs + 64 * c);
            q[2 * c] = _mm512_and_si512(raw, low_mask);
            q[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask);
            s[2 * c] = _mm512_permutexvar_epi16(idx[2 * c], scales);
            s[2 * c + 1] = _mm512_permutexvar_epi16(idx[2 * c + 1], scales);
        }
        const float d = half(x[b].d);
        const float dmin = half(x[b].dmin);
        // Activation side per token.
        for (int t = 0; t < 4; ++t) {
            const block_q8_k& yb = y[t][b];
            const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(yb.bsums)),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(yb.bsums + 8)));
            acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(yb.d * dmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bs)), acc_m[t]);
            __m512i sumi = _mm512_setzero_si512();
            for (int c = 0; c < 2; ++c) {
                const std::int8_t* q8 = yb.qs + 128 * c;
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[2 * c], load_2x32(q8, q8 + 64)), s[2 * c]);
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[2 * c + 1], load_2x32(q8 + 32, q8 + 96)),
                                           s[2 * c + 1]);
            }
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(yb.d * d), _mm512_cvtepi32_ps(sumi), acc[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(acc[t]) - _mm512_reduce_add_ps(_mm512_zextps128_ps512(acc_m[t]));
    }
}

} // namespace sluice::kernels::avx512
