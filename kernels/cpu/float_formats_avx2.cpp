// AVX2+FMA+F16C kernels for F32, F16 and BF16 weights: conversion and dot against f32 activations (one token,
// and four tokens for prefill for F16 and BF16).
#include "kernels/cpu/scalar_kernels.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {
namespace {

inline __m256 load_f16(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 load_bf16(const std::uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// Dot of n (a multiple of 8) values with four independent accumulators; LoadW converts 8 weights to floats.
template <typename T, typename LoadW>
float dot_with(std::size_t n, const T* w, const float* x, LoadW load) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = _mm256_fmadd_ps(load(w + i + 8 * k), _mm256_loadu_ps(x + i + 8 * k), acc[k]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        acc[0] = _mm256_fmadd_ps(load(w + i), _mm256_loadu_ps(x + i), acc[0]);
    }
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

// dot_with for four activation rows, each with dot_with's accumulators and order, so each sum is bit-identical;
// each weight vector converts once for the four tokens. The 16 accumulators leave the compiler two to keep in
// memory: measured faster than two passes of 8 (k = 0, 1 then 2, 3), whose every-other-line reads of four
// activation rows ran a third slower than the 1-token path at 4096 columns.
template <typename T, typename LoadW>
void dot4_with(std::size_t n, const T* w, const float* const x[4], LoadW load, float* sum) {
    __m256 acc[4][4];
    for (auto& a : acc) {
        a[0] = a[1] = a[2] = a[3] = _mm256_setzero_ps();
    }
    const std::size_t steps = n / 32 * 32;
    for (std::size_t i = 0; i < steps; i += 32) {
        for (int k = 0; k < 4; ++k) {
            const __m256 wv = load(w + i + 8 * k);
            for (int t = 0; t < 4; ++t) {
                acc[t][k] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + i + 8 * k), acc[t][k]);
            }
        }
    }
    for (std::size_t i = steps; i + 8 <= n; i += 8) {
        const __m256 wv = load(w + i);
        for (int t = 0; t < 4; ++t) {
            acc[t][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + i), acc[t][0]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        sum[t] = hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
    }
}

void token_rows(const void* act, std::size_t act_stride, const float* (&x)[4]) {
    for (int t = 0; t < 4; ++t) {
        x[t] = reinterpret_cast<const float*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
}

} // namespace

void dequantize_f16(const void* src, float* dst, std::size_t n) {
    const auto* h = static_cast<const std::uint16_t*>(src);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, load_f16(h + i));
    }
    scalar::dequantize_f16(h + i, dst + i, n - i);
}

void dequantize_bf16(const void* src, float* dst, std::size_t n) {
    const auto* h = static_cast<const std::uint16_t*>(src);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, load_bf16(h + i));
    }
    scalar::dequantize_bf16(h + i, dst + i, n - i);
}

float dot_f32(std::size_t n, const void* w, const void* act) {
    const auto* a = static_cast<const float*>(w);
    const auto* x = static_cast<const float*>(act);
    const std::size_t body = n & ~std::size_t{7};
    return dot_with(body, a, x, [](const float* p) { return _mm256_loadu_ps(p); }) +
           scalar::dot_f32(n - body, a + body, x + body);
}

float dot_f16(std::size_t n, const void* w, const void* act) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const auto* x = static_cast<const float*>(act);
    const std::size_t body = n & ~std::size_t{7};
    return dot_with(body, h, x, load_f16) + scalar::dot_f16(n - body, h + body, x + body);
}

float dot_bf16(std::size_t n, const void* w, const void* act) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const auto* x = static_cast<const float*>(act);
    const std::size_t body = n & ~std::size_t{7};
    return dot_with(body, h, x, load_bf16) + scalar::dot_bf16(n - body, h + body, x + body);
}

void dot4_f16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const float* x[4];
    token_rows(act, act_stride, x);
    const std::size_t body = n & ~std::size_t{7};
    dot4_with(body, h, x, load_f16, out);
    for (int t = 0; t < 4; ++t) {
        out[t] += scalar::dot_f16(n - body, h + body, x[t] + body);
    }
}

void dot4_bf16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const float* x[4];
    token_rows(act, act_stride, x);
    const std::size_t body = n & ~std::size_t{7};
    dot4_with(body, h, x, load_bf16, out);
    for (int t = 0; t < 4; ++t) {
        out[t] += scalar::dot_bf16(n - body, h + body, x[t] + body);
    }
}

} // namespace sluice::kernels::avx2
