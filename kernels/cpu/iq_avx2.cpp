// AVX2 kernels for the IQ1/IQ2/IQ3 formats against Q8_K activations (one token, and four tokens for prefill).
// A super-block unpacks once into eight runs of 32 grid magnitudes, their signs and per-16 integer scales; each
// token then adds sum(scale * magnitude * sign * y) into an exact integer, and the float step is the scalar
// reference's, so every result is bit-identical to the scalar kernels'. Grid rows are single 64/32-bit loads;
// every index a block can hold is a valid row.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

#include <array>
#include <cstring>

namespace sluice::kernels::avx2 {
namespace {

// One unpacked super-block: run k holds values 32k..32k+31.
struct iq_weights {
    __m256i mag[8];   // magnitudes (unsigned, < 64), or for IQ1 |grid| (0 or 1)
    __m256i sign[8];  // whose sign _mm256_sign_epi8 applies to the activations (0 only where mag is 0)
    __m256i scale[8]; // words: the scale of values 0..15 in the low lane, of 16..31 in the high lane
    __m256i delta[8]; // IQ1 only: per 4-value lane, the weight of the activation sum (scale * delta sign)
    float factor;     // d times the format's constant (0.125 for IQ2 and IQ1, 0.25 for IQ3_XXS, 1 for IQ3_S)
};

// 32 sign bits to bytes usable by _mm256_sign_epi8: -1 where the bit is set, +1 elsewhere.
inline __m256i sign_bytes(std::uint32_t bits) {
    return _mm256_or_si256(bits_to_bytes(bits), _mm256_set1_epi8(1));
}

// The sign patterns of iq_signs as bytes for _mm256_sign_epi8: -1 where negative, +1 elsewhere, 8 per entry.
constexpr std::array<std::uint64_t, 128> sign_patterns = [] {
    std::array<std::uint64_t, 128> t{};
    for (unsigned i = 0; i < 128; ++i) {
        for (int j = 0; j < 8; ++j) {
            t[i] |= static_cast<std::uint64_t>((iq_signs[i] >> j) & 1 ? 0xff : 0x01) << (8 * j);
        }
    }
    return t;
}();

// The four 7-bit sign indices of an IQ2_XXS/IQ3_XXS word as 32 sign bytes.
inline __m256i xxs_signs(std::uint32_t aux) {
    return _mm256_set_epi64x(static_cast<long long>(sign_patterns[(aux >> 21) & 127]),
                             static_cast<long long>(sign_patterns[(aux >> 14) & 127]),
                             static_cast<long long>(sign_patterns[(aux >> 7) & 127]),
                             static_cast<long long>(sign_patterns[aux & 127]));
}

// Word broadcast of one scale to both lanes, or of two scales to the low and high lane.
inline __m256i scale_words(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(hi)), _mm_set1_epi16(static_cast<short>(lo)));
}

inline __m256i rows4(const std::uint64_t* grid, int i0, int i1, int i2, int i3) {
    return _mm256_set_epi64x(static_cast<long long>(grid[i3]), static_cast<long long>(grid[i2]),
                             static_cast<long long>(grid[i1]), static_cast<long long>(grid[i0]));
}

void unpack(const block_iq2_xxs& x, iq_weights& w) {
    for (int k = 0; k < 8; ++k) {
        std::uint32_t aux[2];
        std::memcpy(aux, x.qs + 4 * k, 8);
        w.mag[k] = rows4(iq2xxs_grid, aux[0] & 0xff, (aux[0] >> 8) & 0xff, (aux[0] >> 16) & 0xff, aux[0] >> 24);
        w.sign[k] = xxs_signs(aux[1]);
        const int s = 2 * static_cast<int>(aux[1] >> 28) + 1;
        w.scale[k] = scale_words(s, s);
    }
    w.factor = 0.125f * half(x.d);
}

void unpack(const block_iq2_xs& x, iq_weights& w) {
    for (int k = 0; k < 8; ++k) {
        const std::uint16_t* q = x.qs + 4 * k;
        w.mag[k] = rows4(iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
        w.sign[k] = _mm256_set_epi64x(
            static_cast<long long>(sign_patterns[q[3] >> 9]), static_cast<long long>(sign_patterns[q[2] >> 9]),
            static_cast<long long>(sign_patterns[q[1] >> 9]), static_cast<long long>(sign_patterns[q[0] >> 9]));
        w.scale[k] = scale_words(2 * (x.scales[k] & 0xf) + 1, 2 * (x.scales[k] >> 4) + 1);
    }
    w.factor = 0.125f * half(x.d);
}

void unpack(const block_iq2_s& x, iq_weights& w) {
    for (int k = 0; k < 8; ++k) {
        const std::uint8_t h = x.qh[k];
        const std::uint8_t* q = x.qs + 4 * k;
        w.mag[k] = rows4(iq2s_grid, q[0] | ((h & 3) << 8), q[1] | ((h & 12) << 6), q[2] | ((h & 48) << 4),
                         q[3] | ((h & 192) << 2));
        std::uint32_t bits;
        std::memcpy(&bits, x.qs + 32 + 4 * k, 4);
        w.sign[k] = sign_bytes(bits);
        w.scale[k] = scale_words(2 * (x.scales[k] & 0xf) + 1, 2 * (x.scales[k] >> 4) + 1);
    }
    w.factor = 0.125f * half(x.d);
}

void unpack(const block_iq3_xxs& x, iq_weights& w) {
    for (int k = 0; k < 8; ++k) {
        const std::uint8_t* q = x.qs + 8 * k;
        w.mag[k] = _mm256_setr_epi32(static_cast<int>(iq3xxs_grid[q[0]]), static_cast<int>(iq3xxs_grid[q[1]]),
                                     static_cast<int>(iq3xxs_grid[q[2]]), static_cast<int>(iq3xxs_grid[q[3]]),
                                     static_cast<int>(iq3xxs_grid[q[4]]), static_cast<int>(iq3xxs_grid[q[5]]),
                                     static_cast<int>(iq3xxs_grid[q[6]]), static_cast<int>(iq3xxs_grid[q[7]]));
        std::uint32_t aux;
        std::memcpy(&aux, x.qs + 64 + 4 * k, 4);
        w.sign[k] = xxs_signs(aux);
        const int s = 2 * static_cast<int>(aux >> 28) + 1;
        w.scale[k] = scale_words(s, s);
    }
    w.factor = 0.25f * half(x.d);
}

void unpack(const block_iq3_s& x, iq_weights& w) {
    for (int k = 0; k < 8; ++k) {
        const std::uint8_t* q = x.qs + 8 * k;
        const int h = x.qh[k];
        alignas(32) std::int32_t rows[8];
        for (int j = 0; j < 8; ++j) {
            rows[j] = static_cast<std::int32_t>(iq3s_grid[q[j] | (((h >> j) & 1) << 8)]);
        }
        w.mag[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(rows));
        std::uint32_t bits;
        std::memcpy(&bits, x.signs + 4 * k, 4);
        w.sign[k] = sign_bytes(bits);
        const int s = 1 + 2 * ((x.scales[k / 2] >> (4 * (k % 2))) & 0xf);
        w.scale[k] = scale_words(s, s);
    }
    w.factor = half(x.d);
}

// IQ1: magnitudes |grid| with the grid as sign source; main scale 8 * (2s + 1) per 16 values, and the delta term
// (2s + 1) * (+-1) per group of 8 on the activation sums (lanes 2g, 2g + 1 of a run's 4-value sums).
inline void set_iq1_run(iq_weights& w, int k, __m256i q, int s_lo, int s_hi, const bool minus[4]) {
    w.mag[k] = _mm256_abs_epi8(q);
    w.sign[k] = q;
    w.scale[k] = scale_words(8 * (2 * s_lo + 1), 8 * (2 * s_hi + 1));
    int dw[4];
    for (int g = 0; g < 4; ++g) {
        const int s = 2 * (g < 2 ? s_lo : s_hi) + 1;
        dw[g] = minus[g] ? -s : s;
    }
    w.delta[k] = _mm256_setr_epi32(dw[0], dw[0], dw[1], dw[1], dw[2], dw[2], dw[3], dw[3]);
}

void unpack(const block_iq1_s& x, iq_weights& w) {
    for (int k = 0; k < 8; ++k) {
        const int h = x.qh[k];
        const std::uint8_t* q = x.qs + 4 * k;
        const __m256i rows = rows4(iq1s_grid, q[0] | ((h & 7) << 8), q[1] | (((h >> 3) & 7) << 8),
                                   q[2] | (((h >> 6) & 7) << 8), q[3] | (((h >> 9) & 7) << 8));
        const bool m = (h & 0x8000) != 0;
        const bool minus[4] = {m, m, m, m};
        const int s = (h >> 12) & 7;
        set_iq1_run(w, k, rows, s, s, minus);
    }
    w.factor = 0.125f * half(x.d);
}

void unpack(const block_iq1_m& x, iq_weights& w) {
    std::uint16_t sc[4];
    std::memcpy(sc, x.scales, 8);
    const auto d = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                              (sc[3] & 0xf000));
    for (int k = 0; k < 8; ++k) {
        const std::uint8_t* q = x.qs + 4 * k;
        const int n0 = x.qh[2 * k] & 0xf, n1 = x.qh[2 * k] >> 4, n2 = x.qh[2 * k + 1] & 0xf, n3 = x.qh[2 * k + 1] >> 4;
        const __m256i rows = rows4(iq1s_grid, q[0] | ((n0 & 7) << 8), q[1] | ((n1 & 7) << 8), q[2] | ((n2 & 7) << 8),
                                   q[3] | ((n3 & 7) << 8));
        const bool minus[4] = {(n0 & 8) != 0, (n1 & 8) != 0, (n2 & 8) != 0, (n3 & 8) != 0};
        const int s_lo = (sc[k / 2] >> (6 * (k % 2))) & 7, s_hi = (sc[k / 2] >> (6 * (k % 2) + 3)) & 7;
        set_iq1_run(w, k, rows, s_lo, s_hi, minus);
    }
    w.factor = 0.125f * half(d);
}

// The exact integer sum of one super-block with one token.
template <bool Delta>
inline int block_isum(const iq_weights& w, const block_q8_k& y) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * k));
        const __m256i p = _mm256_maddubs_epi16(w.mag[k], _mm256_sign_epi8(yv, w.sign[k]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, w.scale[k]));
        if constexpr (Delta) {
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(sum_s8(yv), w.delta[k]));
        }
    }
    return hsum_i32(acc);
}

template <class Block, bool Delta = false>
float dot_iq(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    iq_weights qw;
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        sum += qw.factor * y[b].d * static_cast<float>(block_isum<Delta>(qw, y[b]));
    }
    return sum;
}

template <class Block, bool Delta = false>
void dot4_iq(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const Block*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    iq_weights qw;
    float sum[4] = {0, 0, 0, 0};
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        for (int t = 0; t < 4; ++t) {
            sum[t] += qw.factor * y[t][b].d * static_cast<float>(block_isum<Delta>(qw, y[t][b]));
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = sum[t];
    }
}

} // namespace

float dot_iq2_xxs(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq2_xxs>(n, w, a);
}
float dot_iq2_xs(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq2_xs>(n, w, a);
}
float dot_iq2_s(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq2_s>(n, w, a);
}
float dot_iq3_xxs(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq3_xxs>(n, w, a);
}
float dot_iq3_s(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq3_s>(n, w, a);
}
float dot_iq1_s(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq1_s, true>(n, w, a);
}
float dot_iq1_m(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq1_m, true>(n, w, a);
}

void dot4_iq2_xxs(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq2_xxs>(n, w, a, s, o);
}
void dot4_iq2_xs(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq2_xs>(n, w, a, s, o);
}
void dot4_iq2_s(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq2_s>(n, w, a, s, o);
}
void dot4_iq3_xxs(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq3_xxs>(n, w, a, s, o);
}
void dot4_iq3_s(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq3_s>(n, w, a, s, o);
}
void dot4_iq1_s(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq1_s, true>(n, w, a, s, o);
}
void dot4_iq1_m(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq1_m, true>(n, w, a, s, o);
}

} // namespace sluice::kernels::avx2
