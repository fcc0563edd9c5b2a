// Small AVX2 helpers shared by the *_avx2.cpp kernels; include only from files built with -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sluice::kernels::avx2 {

/// Horizontal sum of 8 floats.
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/// Horizontal sum of 8 int32.
inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/// f16 bit pattern to float through F16C.
inline float half(std::uint16_t h) {
    return _cvtsh_ss(h);
}

/// Sum of 16 products of unsigned bytes `u` and signed bytes `s` pairwise into 8 int32 (no overflow for u < 128).
inline __m256i dot_u8_s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/// 32 signed bytes times 32 signed bytes summed into 8 int32 (values must lie in [-127, 127]).
inline __m256i dot_s8_s8(__m256i a, __m256i b) {
    return dot_u8_s8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

/// 16 packed bytes of nibbles to 32 bytes: low nibbles first, then high nibbles.
inline __m256i unpack_nibbles(const std::uint8_t* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i mask = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), _mm_and_si128(raw, mask));
}

/// Expands 32 bits to 32 bytes: byte i is 0xff when bit i of `bits` is set, else 0.
inline __m256i bits_to_bytes(std::uint32_t bits) {
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                          3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), pick), bit);
    return _mm256_cmpeq_epi8(v, bit);
}

/// The 16 IQ4 levels in both 128-bit lanes, for _mm256_shuffle_epi8 lookups.
inline __m256i iq4_table() {
    const __m128i t = _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    return _mm256_set_m128i(t, t);
}

/// Sum of 32 signed bytes as 8 int32 lanes.
inline __m256i sum_s8(__m256i v) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v), _mm256_set1_epi16(1));
}

/// dst[i] = d * q[i] + m for 32 signed bytes q. With m == 0 it is the plain product, so a zero keeps the sign of
/// d * q as in the scalar reference (a fused add of +0 would turn -0 into +0).
inline void store_scaled_i8(__m256i q, float d, float m, float* dst) {
    const __m256 vd = _mm256_set1_ps(d);
    const __m256 vm = _mm256_set1_ps(m);
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[k]));
        _mm256_storeu_ps(dst + 8 * k, m == 0.0f ? _mm256_mul_ps(vd, v) : _mm256_fmadd_ps(vd, v, vm));
    }
}

/// dst[i] = d0 * q[i] - m0 for the first 16 of 32 signed bytes q and d1 * q[i] - m1 for the last 16, the product
/// rounded before the subtraction (not fused), so results equal the scalar reference's (and GGML's) bit for bit.
inline void store_mul_sub_i8(__m256i q, float d0, float m0, float d1, float m1, float* dst) {
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[k]));
        const __m256 prod = _mm256_mul_ps(_mm256_set1_ps(k < 2 ? d0 : d1), v);
        _mm256_storeu_ps(dst + 8 * k, _mm256_sub_ps(prod, _mm256_set1_ps(k < 2 ? m0 : m1)));
    }
}

} // namespace sluice::kernels::avx2
