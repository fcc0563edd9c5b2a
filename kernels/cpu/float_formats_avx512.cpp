// AVX-512 kernels for F32, F16 and BF16 weights: dot against f32 activations and F16 dequantize.
#include "kernels/cpu/scalar_kernels.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

inline __m512 load_f16(const std::uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __m512 load_bf16(const std::uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

inline __m512 load_f32(const float* p) {
    return _mm512_loadu_ps(p);
}

// Dot of n (a multiple of 16) values with four independent accumulators.
template <typename T, typename LoadW>
float dot_with(std::size_t n, const T* w, const float* x, LoadW load) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = _mm512_fmadd_ps(load(w + i + 16 * k), _mm512_loadu_ps(x + i + 16 * k), acc[k]);
        }
    }
    for (; i + 16 <= n; i += 16) {
        acc[0] = _mm512_fmadd_ps(load(w + i), _mm512_loadu_ps(x + i), acc[0]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

} // namespace

void dequantize_f16(const void* src, float* dst, std::size_t n) {
    const auto* h = static_cast<const std::uint16_t*>(src);
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(dst + i, load_f16(h + i));
    }
    scalar::dequantize_f16(h + i, dst + i, n - i);
}

float dot_f32(std::size_t n, const void* w, const void* act) {
    const auto* a = static_cast<const float*>(w);
    const auto* x = static_cast<const float*>(act);
    const std::size_t body = n & ~std::size_t{15};
    return dot_with(body, a, x, load_f32) + scalar::dot_f32(n - body, a + body, x + body);
}

float dot_f16(std::size_t n, const void* w, const void* act) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const auto* x = static_cast<const float*>(act);
    const std::size_t body = n & ~std::size_t{15};
    return dot_with(body, h, x, load_f16) + scalar::dot_f16(n - body, h + body, x + body);
}

float dot_bf16(std::size_t n, const void* w, const void* act) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const auto* x = static_cast<const float*>(act);
    const std::size_t body = n & ~std::size_t{15};
    return dot_with(body, h, x, load_bf16) + scalar::dot_bf16(n - body, h + body, x + body);
}

void dot4_f16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const float* x[4];
    for (int t = 0; t < 4; ++t) {
        x[t] = reinterpret_cast<const float*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    // Same steps and accumulators as dot_f16 per token, so results are bit-identical; weights convert once.
    __m512 acc[4][4];
    for (auto& a : acc) {
        a[0] = a[1] = a[2] = a[3] = _mm512_setzero_ps();
    }
    const std::size_t body = n & ~std::size_t{15};
    std::size_t i = 0;
    for (; i + 64 <= body; i += 64) {
        for (int k = 0; k < 4; ++k) {
            const __m512 wv = load_f16(h + i + 16 * k);
            for (int t = 0; t < 4; ++t) {
                acc[t][k] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[t] + i + 16 * k), acc[t][k]);
            }
        }
    }
    for (; i + 16 <= body; i += 16) {
        const __m512 wv = load_f16(h + i);
        for (int t = 0; t < 4; ++t) {
            acc[t][0] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[t] + i), acc[t][0]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3]));
        out[t] = _mm512_reduce_add_ps(sum) + scalar::dot_f16(n - body, h + body, x[t] + body);
    }
}

} // namespace sluice::kernels::avx512
