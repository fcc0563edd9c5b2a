// AVX2 kernel for Q5_0 weights (5-bit values stored +16) against Q8_0 activations.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

#include <cstring>

namespace sluice::kernels::avx2 {

float dot_q5_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < n / qk32; ++b) {
        std::uint32_t qh = 0;
        std::memcpy(&qh, x[b].qh, 4);
        const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), bit4);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(x[b].qs), hi), sixteen);
        const __m256i p = dot_s8_s8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].d) * half(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum(acc);
}

void dequantize_q5_0(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q5_0*>(src);
    for (std::size_t b = 0; b < n / qk32; ++b, dst += qk32) {
        std::uint32_t qh = 0;
        std::memcpy(&qh, x[b].qh, 4);
        const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(x[b].qs), hi), _mm256_set1_epi8(16));
        store_scaled_i8(q, half(x[b].d), 0.0f, dst);
    }
}

} // namespace sluice::kernels::avx2
