// AVX2 kernel for Q5_1 weights (5-bit values with scale and minimum) against Q8_0 activations.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

#include <cstring>

namespace sluice::kernels::avx2 {

float dot_q5_1(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_1*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    __m256 acc_m = _mm256_setzero_ps();
    for (std::size_t b = 0; b < n / qk32; ++b) {
        std::uint32_t qh = 0;
        std::memcpy(&qh, x[b].qh, 4);
        const __m256i q = _mm256_or_si256(unpack_nibbles(x[b].qs), _mm256_and_si256(bits_to_bytes(qh), bit4));
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        const float dy = half(y[b].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].d) * dy), _mm256_cvtepi32_ps(dot_u8_s8(q, a)), acc);
        acc_m = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].m) * dy), _mm256_cvtepi32_ps(sum_s8(a)), acc_m);
    }
    return hsum(_mm256_add_ps(acc, acc_m));
}

void dequantize_q5_1(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q5_1*>(src);
    for (std::size_t b = 0; b < n / qk32; ++b, dst += qk32) {
        std::uint32_t qh = 0;
        std::memcpy(&qh, x[b].qh, 4);
        const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10));
        store_scaled_i8(_mm256_or_si256(unpack_nibbles(x[b].qs), hi), half(x[b].d), half(x[b].m), dst);
    }
}

} // namespace sluice::kernels::avx2
