// AVX-512 kernels for F32, F16 and BF16 weights: dot against f32 activations, the 4-token F16 and BF16 prefill
// kernels (one row, and a tile of four rows) and F16 dequantize.
#include "kernels/cpu/scalar_kernels.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <algorithm>

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

/// The two 16-bit float formats for the 4-token kernels: how 16 weights widen, and the scalar tail.
struct f16_format {
    static __m512 load(const std::uint16_t* p) { return load_f16(p); }
    static float tail(std::size_t n, const std::uint16_t* h, const float* x) { return scalar::dot_f16(n, h, x); }
};
struct bf16_format {
    static __m512 load(const std::uint16_t* p) { return load_bf16(p); }
    static float tail(std::size_t n, const std::uint16_t* h, const float* x) { return scalar::dot_bf16(n, h, x); }
};

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

namespace {

// acc[t][k] += w[i..i1) * x[t][i..i1) in dot_f16's (and dot_bf16's) order: 64-value steps over k = 0..3, then
// 16-value steps into k = 0.
template <class Format>
void dot4_span(const std::uint16_t* h, const float* const x[4], std::size_t i, std::size_t i1, __m512 (&acc)[4][4]) {
    for (; i + 64 <= i1; i += 64) {
        for (int k = 0; k < 4; ++k) {
            const __m512 wv = Format::load(h + i + 16 * k);
            for (int t = 0; t < 4; ++t) {
                acc[t][k] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[t] + i + 16 * k), acc[t][k]);
            }
        }
    }
    for (; i + 16 <= i1; i += 16) {
        const __m512 wv = Format::load(h + i);
        for (int t = 0; t < 4; ++t) {
            acc[t][0] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[t] + i), acc[t][0]);
        }
    }
}

template <class Format>
void dot4_finish(std::size_t n, std::size_t body, const std::uint16_t* h, const float* const x[4],
                 const __m512 (&acc)[4][4], float* out, std::size_t out_stride) {
    for (int t = 0; t < 4; ++t) {
        const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3]));
        out[t * out_stride] = _mm512_reduce_add_ps(sum) + Format::tail(n - body, h + body, x[t] + body);
    }
}

void token_rows(const void* act, std::size_t act_stride, const float* (&x)[4]) {
    for (int t = 0; t < 4; ++t) {
        x[t] = reinterpret_cast<const float*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
}

} // namespace

namespace {

template <class Format>
void dot4_16bit(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const float* x[4];
    token_rows(act, act_stride, x);
    // Same steps and accumulators as dot_f16 / dot_bf16 per token, so results are bit-identical; weights
    // convert once.
    __m512 acc[4][4];
    for (auto& a : acc) {
        a[0] = a[1] = a[2] = a[3] = _mm512_setzero_ps();
    }
    const std::size_t body = n & ~std::size_t{15};
    dot4_span<Format>(h, x, 0, body, acc);
    dot4_finish<Format>(n, body, h, x, acc, out, 1);
}

} // namespace

void dot4_f16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    dot4_16bit<f16_format>(n, w, act, act_stride, out);
}

void dot4_bf16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    dot4_16bit<bf16_format>(n, w, act, act_stride, out);
}

namespace {

// Four weight rows x four tokens in registers (16 FMAs per 4 weight and 4 activation loads instead of 4 FMAs
// per 5). dot_f16 gives 64-value step j to accumulator j % 4 and the 16-value remainder to accumulator 0;
// each accumulator only depends on its own sequence of updates, so running the four accumulators' sequences
// one after another (pass k over steps j = k, k + 4, ...) gives the same bits while needing 16 registers, not 64.
// Columns go in chunks whose activations (4 x 4 KiB) stay in L1 while up to `max_quads` groups of four rows
// pass over them; each group's accumulators wait in `acc` between chunks.
constexpr std::size_t max_quads = 4;

template <class Format>
void dot4_quads(std::size_t n, const std::uint8_t* w, std::size_t w_stride, std::size_t n_quads,
                const float* const x[4], float* out, std::size_t out_stride) {
    constexpr std::size_t chunk = 1024; // a multiple of 64
    const std::size_t body = n & ~std::size_t{15};
    const std::size_t full = n & ~std::size_t{63};
    alignas(64) __m512 acc[max_quads][4][4][4]; // [row group][accumulator k][row][token]
    for (std::size_t q = 0; q < n_quads; ++q) {
        for (auto& k : acc[q]) {
            for (auto& r : k) {
                r[0] = r[1] = r[2] = r[3] = _mm512_setzero_ps();
            }
        }
    }
    auto row = [&](std::size_t q, int r) { return reinterpret_cast<const std::uint16_t*>(w + (4 * q + r) * w_stride); };
    // a[r][t] += w[4q + r][i..i+16) * x[t][i..i+16) for i = i0, i0 + step, ... < i1
    auto pass = [&](std::size_t q, __m512(&a)[4][4], std::size_t i0, std::size_t i1, std::size_t step) {
        const std::uint16_t* h[4] = {row(q, 0), row(q, 1), row(q, 2), row(q, 3)};
        for (std::size_t i = i0; i + 16 <= i1; i += step) {
            const __m512 w0 = Format::load(h[0] + i), w1 = Format::load(h[1] + i), w2 = Format::load(h[2] + i),
                         w3 = Format::load(h[3] + i);
            for (int t = 0; t < 4; ++t) {
                const __m512 xv = _mm512_loadu_ps(x[t] + i);
                a[0][t] = _mm512_fmadd_ps(w0, xv, a[0][t]);
                a[1][t] = _mm512_fmadd_ps(w1, xv, a[1][t]);
                a[2][t] = _mm512_fmadd_ps(w2, xv, a[2][t]);
                a[3][t] = _mm512_fmadd_ps(w3, xv, a[3][t]);
            }
        }
    };
    for (std::size_t c0 = 0; c0 < full; c0 += chunk) {
        const std::size_t c1 = std::min(full, c0 + chunk);
        for (std::size_t q = 0; q < n_quads; ++q) {
            for (std::size_t k = 0; k < 4; ++k) {
                pass(q, acc[q][k], c0 + 16 * k, c1, 64);
            }
        }
    }
    for (std::size_t q = 0; q < n_quads; ++q) {
        pass(q, acc[q][0], full, body, 16);
        for (int r = 0; r < 4; ++r) {
            const std::uint16_t* h = row(q, r);
            for (int t = 0; t < 4; ++t) {
                const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[q][0][r][t], acc[q][1][r][t]),
                                                 _mm512_add_ps(acc[q][2][r][t], acc[q][3][r][t]));
                out[t * out_stride + 4 * q + r] =
                    _mm512_reduce_add_ps(sum) + Format::tail(n - body, h + body, x[t] + body);
            }
        }
    }
}

template <class Format>
void dot4_rows_16bit(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                     std::size_t act_stride, float* out, std::size_t out_stride) {
    const auto* wb = static_cast<const std::uint8_t*>(w);
    const float* x[4];
    token_rows(act, act_stride, x);
    std::size_t r = 0;
    while (r + 4 <= n_rows) {
        const std::size_t quads = std::min(max_quads, (n_rows - r) / 4);
        dot4_quads<Format>(n, wb + r * w_stride, w_stride, quads, x, out + r, out_stride);
        r += 4 * quads;
    }
    for (; r < n_rows; ++r) {
        float o[4];
        dot4_16bit<Format>(n, wb + r * w_stride, act, act_stride, o);
        for (std::size_t t = 0; t < 4; ++t) {
            out[t * out_stride + r] = o[t];
        }
    }
}

} // namespace

void dot4_rows_f16(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                   std::size_t act_stride, float* out, std::size_t out_stride) {
    dot4_rows_16bit<f16_format>(n, w, w_stride, n_rows, act, act_stride, out, out_stride);
}

void dot4_rows_bf16(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                    std::size_t act_stride, float* out, std::size_t out_stride) {
    dot4_rows_16bit<bf16_format>(n, w, w_stride, n_rows, act, act_stride, out, out_stride);
}

} // namespace sluice::kernels::avx512
