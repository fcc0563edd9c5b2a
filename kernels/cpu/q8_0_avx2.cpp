// AVX2 kernels for Q8_0 and Q4_0 weights against Q8_0 activations, a 4-token Q8_0 variant for prefill, and
// Q8_0 dequantize.
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

// Per token the same block steps and accumulators as dot_q8_0 (block pairs into acc[t][0] / acc[t][1], a lone
// last block into acc[t][0]), so each result is bit-identical to it; |w| is taken once per block, and the eight
// scale products of a block pair (4 tokens x 2 blocks) are one conversion and one multiply.
void dot4_q8_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q8_0*>(w);
    const block_q8_0* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    __m256 acc[4][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm256_setzero_ps();
    }
    const std::size_t nb = n / qk32;
    std::size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        // Lane 2t+h of dxy: half(x[b+h].d) * half(y[t][b+h].d), the product dot_q8_0 forms.
        const __m128i yh = _mm_setr_epi16(static_cast<short>(y[0][b].d), static_cast<short>(y[0][b + 1].d),
                                          static_cast<short>(y[1][b].d), static_cast<short>(y[1][b + 1].d),
                                          static_cast<short>(y[2][b].d), static_cast<short>(y[2][b + 1].d),
                                          static_cast<short>(y[3][b].d), static_cast<short>(y[3][b + 1].d));
        const __m128i xh = _mm_set1_epi32(static_cast<int>(x[b].d | (static_cast<std::uint32_t>(x[b + 1].d) << 16)));
        const __m256 dxy = _mm256_mul_ps(_mm256_cvtph_ps(xh), _mm256_cvtph_ps(yh));
        for (int h = 0; h < 2; ++h) {
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + h].qs));
            const __m256i xabs = _mm256_sign_epi8(xv, xv);
            for (int t = 0; t < 4; ++t) {
                const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][b + h].qs));
                const __m256i p = dot_u8_s8(xabs, _mm256_sign_epi8(yv, xv));
                const __m256 d = _mm256_permutevar8x32_ps(dxy, _mm256_set1_epi32(2 * t + h));
                acc[t][h] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[t][h]);
            }
        }
    }
    for (; b < nb; ++b) {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
        const float dx = half(x[b].d);
        for (int t = 0; t < 4; ++t) {
            const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][b].qs));
            const __m256i p = dot_u8_s8(_mm256_sign_epi8(xv, xv), _mm256_sign_epi8(yv, xv));
            acc[t][0] = _mm256_fmadd_ps(_mm256_set1_ps(dx * half(y[t][b].d)), _mm256_cvtepi32_ps(p), acc[t][0]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = hsum(_mm256_add_ps(acc[t][0], acc[t][1]));
    }
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
