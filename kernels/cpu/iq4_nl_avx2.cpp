// AVX2 kernels for IQ4_NL and IQ4_XS weights: nibble indices looked up in the level table with one shuffle.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {

float dot_iq4_nl(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq4_nl*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const __m256i table = iq4_table();
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const __m256i q = _mm256_shuffle_epi8(table, unpack_nibbles(x[b].qs));
        const __m256i p = dot_s8_s8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(x[b].d) * half(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum(acc);
}

float dot_iq4_xs(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq4_xs*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const __m256i table = iq4_table();
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
            const int lo = (x[b].scales_l[g / 2] >> (4 * (g % 2))) & 0xf;
            const int ls = (lo | (((x[b].scales_h >> (2 * g)) & 3) << 4)) - 32;
            const __m256i q = _mm256_shuffle_epi8(table, unpack_nibbles(x[b].qs + 16 * g));
            const __m256i p = dot_s8_s8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 32 * g)));
            sumi = _mm256_add_epi32(sumi, _mm256_mullo_epi32(p, _mm256_set1_epi32(ls)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * half(x[b].d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum(acc);
}

void dequantize_iq4_nl(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_iq4_nl*>(src);
    for (std::size_t b = 0; b < n / qk32; ++b, dst += qk32) {
        store_scaled_i8(_mm256_shuffle_epi8(iq4_table(), unpack_nibbles(x[b].qs)), half(x[b].d), 0.0f, dst);
    }
}

void dequantize_iq4_xs(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_iq4_xs*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = half(x[b].d);
        for (int g = 0; g < 8; ++g, dst += 32) {
            const int lo = (x[b].scales_l[g / 2] >> (4 * (g % 2))) & 0xf;
            const int ls = (lo | (((x[b].scales_h >> (2 * g)) & 3) << 4)) - 32;
            const __m256i q = _mm256_shuffle_epi8(iq4_table(), unpack_nibbles(x[b].qs + 16 * g));
            store_scaled_i8(q, d * static_cast<float>(ls), 0.0f, dst);
        }
    }
}

} // namespace sluice::kernels::avx2
