// AVX2 kernels for MXFP4 weights against Q8_0 activations: nibble indices looked up in the doubled FP4 level
// table with one byte shuffle, as IQ4_NL does; the E8M0 scale is a power of two.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {
namespace {

inline __m256i mxfp4_table() {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mxfp4_levels));
    return _mm256_set_m128i(t, t);
}

// The 32 signed levels of one block.
inline __m256i block_values(const block_mxfp4& x, __m256i table) {
    return _mm256_shuffle_epi8(table, unpack_nibbles(x.qs));
}

// One block's term added to a token's accumulator; dot_mxfp4 and dot4_mxfp4 share it, so they agree bit for bit.
inline __m256 step(__m256 acc, __m256i q, float dx, const block_q8_0& y) {
    const __m256i p = dot_s8_s8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs)));
    return _mm256_fmadd_ps(_mm256_set1_ps(dx * half(y.d)), _mm256_cvtepi32_ps(p), acc);
}

} // namespace

float dot_mxfp4(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_mxfp4*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const __m256i table = mxfp4_table();
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < n / qk32; ++b) {
        acc = step(acc, block_values(x[b], table), e8m0_to_f32_half(x[b].e), y[b]);
    }
    return hsum(acc);
}

void dot4_mxfp4(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_mxfp4*>(w);
    const block_q8_0* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const __m256i table = mxfp4_table();
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const __m256i q = block_values(x[b], table);
        const float dx = e8m0_to_f32_half(x[b].e);
        for (int t = 0; t < 4; ++t) {
            acc[t] = step(acc[t], q, dx, y[t][b]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = hsum(acc[t]);
    }
}

void dequantize_mxfp4(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_mxfp4*>(src);
    const __m256i table = mxfp4_table();
    for (std::size_t b = 0; b < n / qk32; ++b, dst += qk32) {
        // d * level is exact (a power of two times a small integer), so the fused form equals the scalar one.
        store_scaled_i8(block_values(x[b], table), e8m0_to_f32_half(x[b].e), 0.0f, dst);
    }
}

} // namespace sluice::kernels::avx2
