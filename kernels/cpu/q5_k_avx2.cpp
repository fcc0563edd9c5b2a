// AVX2 kernel for Q5_K weights against Q8_K activations: Q4_K's scheme plus the fifth bit from qh.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/k_scales.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {

float dot_q5_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const __m256i low_mask = _mm256_set1_epi8(0x0f);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
        const __m128i bs_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums));
        const __m128i bs_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums + 8));
        const __m128i mprod = _mm_madd_epi16(mins, _mm_hadd_epi16(bs_lo, bs_hi));
        acc_m = _mm_fmadd_ps(_mm_set1_ps(-y[b].d * half(x[b].dmin)), _mm_cvtepi32_ps(mprod), acc_m);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qh));
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * c));
            // Bit g of qh[l] is the fifth bit of value l of group g (groups 2c and 2c+1 here).
            const __m256i h_lo = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4);
            const __m256i h_hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(raw, low_mask), h_lo);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low_mask), h_hi);
            const std::int8_t* q8 = y[b].qs + 64 * c;
            const __m256i p_lo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8)));
            const __m256i p_hi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + 32)));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(sm[2 * c])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(sm[2 * c + 1])));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * half(x[b].d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    __m128 m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return hsum(acc) + _mm_cvtss_f32(m);
}

void dequantize_q5_k(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q5_k*>(src);
    const __m256i one = _mm256_set1_epi8(1);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const float d = half(x[b].d);
        const float dmin = half(x[b].dmin);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qh));
        for (int g = 0; g < 8; ++g, dst += 32) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * (g / 2)));
            const __m256i nib = _mm256_and_si256(g % 2 == 0 ? raw : _mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0f));
            const __m256i h = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, g), one), 4);
            const float ds = d * sm[g], dm = dmin * sm[8 + g];
            store_mul_sub_i8(_mm256_or_si256(nib, h), ds, dm, ds, dm, dst); // GGML's order: (d * sc) * q - dmin * m
        }
    }
}

} // namespace sluice::kernels::avx2
