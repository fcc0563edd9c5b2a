// AVX2 activation quantizers: float rows to Q8_0 and Q8_K blocks (same rounding as the scalar reference).
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {
namespace {

// Max |x| over 8*k floats.
float abs_max(const float* x, std::size_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (std::size_t i = 0; i < n; i += 8) {
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    }
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Rounds 32 floats times `id` (nearest-even, like lrintf) to int8.
void round_32(const float* x, float id, std::int8_t* out) {
    const __m256 vid = _mm256_set1_ps(id);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), vid));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), vid));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), vid));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), vid));
    const __m256i w01 = _mm256_packs_epi32(i0, i1);
    const __m256i w23 = _mm256_packs_epi32(i2, i3);
    __m256i b = _mm256_packs_epi16(w01, w23);
    // packs interleaves 128-bit lanes: restore order 0..31.
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), b);
}

} // namespace

void quantize_q8_0(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q8_0*>(dst);
    for (std::size_t b = 0; b < n / qk32; ++b, src += qk32) {
        const float d = abs_max(src, qk32) / 127.0f;
        out[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        round_32(src, d != 0 ? 1.0f / d : 0.0f, out[b].qs);
    }
}

void quantize_q8_k(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q8_k*>(dst);
    for (std::size_t b = 0; b < n / qk_k; ++b, src += qk_k) {
        const float d = abs_max(src, qk_k) / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = d;
        for (std::size_t j = 0; j < qk_k; j += 32) {
            round_32(src + j, id, out[b].qs + j);
        }
        for (std::size_t g = 0; g < 16; ++g) {
            const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(out[b].qs + 16 * g)));
            out[b].bsums[g] = static_cast<std::int16_t>(hsum_i32(_mm256_madd_epi16(v, _mm256_set1_epi16(1))));
        }
    }
}

} // namespace sluice::kernels::avx2
