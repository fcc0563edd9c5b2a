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

} // namespace sluice::kernels::avx512
