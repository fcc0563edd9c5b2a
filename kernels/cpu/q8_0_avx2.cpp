// AVX2 kernels for Q8_0 and Q4_0 weights against Q8_0 activations, and Q8_0 dequantize.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {

void dequantize_q8_0(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q8_0*>(src);
    for (std::size_t b = 0; b < n / qk32; ++b, dst += qk32) {
        const __m256 d = _mm256_set1_ps(half(in[b].d));
        for (int k = 0; k < 4; ++k) {
            const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in[b].qs + 8 * k));
            _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
        }
    }
}

float dot_q8_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q8_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    __m256 acc0 = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    const std::size_t nb = n / qk32;
    std::size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m256i p0 = dot_s8_s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs)),
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs)));
        const __m256i p1 = dot_s8_s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + 1].qs)),
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b + 1].qs)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].d) * half(y[b].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b + 1].d) * half(y[b + 1].d)), _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; b < nb; ++b) {
        const __m256i p = dot_s8_s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs)),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].d) * half(y[b].d)), _mm256_cvtepi32_ps(p), acc0);
    }
    return hsum(_mm256_add_ps(acc0, acc1));
}

float dot_q4_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    __m256 acc = _mm256_setzero_ps();
    const __m256i eight = _mm256_set1_epi8(8);
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const __m256i q = _mm256_sub_epi8(unpack_nibbles(x[b].qs), eight);
        const __m256i p = dot_s8_s8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].d) * half(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum(acc);
}

void dequantize_q4_0(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q4_0*>(src);
    for (std::size_t b = 0; b < n / qk32; ++b, dst += qk32) {
        const __m256i q = _mm256_sub_epi8(unpack_nibbles(x[b].qs), _mm256_set1_epi8(8));
        store_scaled_i8(q, half(x[b].d), 0.0f, dst);
    }
}

} // namespace sluice::kernels::avx2
