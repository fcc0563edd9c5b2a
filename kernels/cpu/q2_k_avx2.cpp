// AVX2 kernels for Q2_K weights against Q8_K activations (one token, four tokens for prefill) and dequantize.
// A super-block is eight runs of 32 values: run k = 4h + s is bits 2s..2s+1 of qs[32h..32h+31] and meets the
// 32 activation bytes at 32k; its first 16 values use scale 2k, its last 16 scale 2k+1.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {
namespace {

// The weight side of one super-block, unpacked once and shared by every token.
struct q2_weights {
    __m256i v[8];     // run k: 32 values 0..3
    __m256i scale[8]; // run k: scale 2k in the low 8 words, 2k+1 in the high 8
    __m256i mins;     // the 16 minimums as words
    float d, dmin;
};

inline void unpack(const block_q2_k& x, q2_weights& w) {
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    const __m256i low = _mm256_broadcastsi128_si256(_mm_and_si128(sc, _mm_set1_epi8(0x0f)));
    w.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0f)));
    const __m256i three = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * h));
        for (int s = 0; s < 4; ++s) {
            const int k = 4 * h + s;
            w.v[k] = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * s), three);
            // Word broadcast of scale byte 2k (low lane) and 2k+1 (high lane); 0x80 zeroes the high byte.
            const char a = static_cast<char>(2 * k), b = static_cast<char>(2 * k + 1), z = static_cast<char>(0x80);
            const __m256i pick = _mm256_setr_epi8(a, z, a, z, a, z, a, z, a, z, a, z, a, z, a, z, b, z, b, z, b, z, b,
                                                  z, b, z, b, z, b, z, b, z);
            w.scale[k] = _mm256_shuffle_epi8(low, pick);
        }
    }
    w.d = half(x.d);
    w.dmin = half(x.dmin);
}

// One super-block of one token added to its accumulators; dot_q2_k and dot4_q2_k share it.
inline void step(const q2_weights& w, const block_q8_k& y, __m256& acc, __m256& acc_m) {
    __m256i sumi = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
        const __m256i p =
            _mm256_maddubs_epi16(w.v[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * k)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, w.scale[k]));
    }
    const __m256i mins = _mm256_madd_epi16(w.mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y.d * w.d), _mm256_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_set1_ps(-y.d * w.dmin), _mm256_cvtepi32_ps(mins), acc_m);
}

} // namespace

float dot_q2_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q2_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    __m256 acc = _mm256_setzero_ps(), acc_m = _mm256_setzero_ps();
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        step(qw, y[b], acc, acc_m);
    }
    return hsum(acc) + hsum(acc_m);
}

void dot4_q2_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q2_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    __m256 acc[4], acc_m[4];
    for (int t = 0; t < 4; ++t) {
        acc[t] = acc_m[t] = _mm256_setzero_ps();
    }
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        for (int t = 0; t < 4; ++t) {
            step(qw, y[t][b], acc[t], acc_m[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = hsum(acc[t]) + hsum(acc_m[t]);
    }
}

void dequantize_q2_k(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q2_k*>(src);
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        for (int k = 0; k < 8; ++k, dst += 32) {
            const std::uint8_t s0 = x[b].scales[2 * k], s1 = x[b].scales[2 * k + 1];
            store_mul_sub_i8(qw.v[k], qw.d * static_cast<float>(s0 & 0xf), qw.dmin * static_cast<float>(s0 >> 4),
                             qw.d * static_cast<float>(s1 & 0xf), qw.dmin * static_cast<float>(s1 >> 4), dst);
        }
    }
}

} // namespace sluice::kernels::avx2
