// Small AVX-512 helpers shared by the *_avx512.cpp kernels; include only from files built with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sluice::kernels::avx512 {

/// f16 bit pattern to float through F16C.
inline float half(std::uint16_t h) {
    return _cvtsh_ss(h);
}

/// Two 256-bit integer vectors joined, `lo` in the low half.
inline __m512i join(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/// 16 floats: `lo` in lanes 0..7 and `hi` in lanes 8..15.
inline __m512 join_ps(float lo, float hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

/// Loads 32 bytes from each of two addresses into one 512-bit vector.
inline __m512i load_2x32(const void* lo, const void* hi) {
    return join(_mm256_loadu_si256(static_cast<const __m256i*>(lo)), _mm256_loadu_si256(static_cast<const __m256i*>(hi)));
}

/// 16 floats: lanes 0..7 take element `a` of `v` and lanes 8..15 take element `b` (a, b < 16).
inline __m512 spread2(__m512 v, int a, int b) {
    return _mm512_permutexvar_ps(join(_mm256_set1_epi32(a), _mm256_set1_epi32(b)), v);
}

/// Nibbles to bytes for two 16-byte groups `a` and `b` placed as the 128-bit lanes (a, a, b, b): the result
/// holds the low nibbles of a, the high nibbles of a, then the same for b (64 bytes in 0..15).
inline __m512i split_nibbles(__m512i aabb) {
    const __m512i shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
    return _mm512_and_si512(_mm512_srlv_epi64(aabb, shift), _mm512_set1_epi8(0x0f));
}

/// The 64 values of two 32-value nibble blocks (16 packed bytes at `a` and at `b`; value j in the low nibble of
/// byte j, value j + 16 in its high nibble), in value order: block `a` in bytes 0..31, block `b` in 32..63.
inline __m512i nibbles_2x16(const std::uint8_t* a, const std::uint8_t* b) {
    const __m256i aa = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
    const __m256i bb = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    return split_nibbles(join(aa, bb));
}

/// Sums of each 4 products (u - bias) * s into 16 int32, for unsigned bytes `u` stored with a +bias offset and
/// signed bytes `s`: the bias is taken off as bias * sum(s). Exact (no saturation).
inline __m512i dot_biased(__m512i u, __m512i s, __m512i bias) {
    const __m512i zero = _mm512_setzero_si512();
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, u, s), _mm512_dpbusd_epi32(zero, bias, s));
}

/// Adds 16 to byte i of the 64 Q5 values `v` where the fifth bit of that value is set: bit j of `bits_a` for
/// value j of the first block (bytes 0..31), bit j of `bits_b` for the second (bytes 32..63).
inline __m512i add_fifth_bits(__m512i v, std::uint32_t bits_a, std::uint32_t bits_b) {
    const __mmask64 set = _cvtu64_mask64(bits_a | (static_cast<std::uint64_t>(bits_b) << 32));
    return _mm512_mask_add_epi8(v, set, v, _mm512_set1_epi8(16));
}

/// Sixteen f16 fields converted to floats with two word permutes. Field i is word idx[i] (0..63) of a 128-byte
/// window made of the 64 bytes at `x_lo` then the 64 at `x_hi`; for the fields whose bit is set in `from_y`, of
/// the window over `y_lo` and `y_hi`. `idx` points to 32 words (the last 16 unused); all four 64-byte ranges must
/// be readable. Picks the scales of several blocks with a few loads instead of one insert per field.
inline __m512 gather_halves(const void* x_lo, const void* x_hi, const void* y_lo, const void* y_hi,
                            const std::int16_t* idx, __mmask32 from_y) {
    const __m512i i = _mm512_loadu_si512(idx);
    const __m512i xw = _mm512_permutex2var_epi16(_mm512_loadu_si512(x_lo), i, _mm512_loadu_si512(x_hi));
    const __m512i yw = _mm512_permutex2var_epi16(_mm512_loadu_si512(y_lo), i, _mm512_loadu_si512(y_hi));
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_mask_blend_epi16(from_y, xw, yw)));
}

/// The products dx * dy of the f16 scales of four weight blocks and four consecutive Q8_0 activation blocks at
/// `y`, in lanes 0..3 (each the same float product as half(x.d) * half(y.d)). Fields 0..3 of `idx` are the word
/// offsets of the weight scales in the window (x_lo, x_hi) as for gather_halves; fields 4..7 must be
/// {0, 17, 34, 51}, the activation scales' offsets.
inline __m128 scale_products4(const void* x_lo, const void* x_hi, const void* y, const std::int16_t* idx) {
    const auto* yb = static_cast<const std::uint8_t*>(y);
    const __m256 s = _mm512_castps512_ps256(gather_halves(x_lo, x_hi, yb, yb + 64, idx, 0xf0));
    return _mm_mul_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

} // namespace sluice::kernels::avx512
