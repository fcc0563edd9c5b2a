// AVX2 kernels for Q3_K weights against Q8_K activations (one token, four tokens for prefill) and dequantize.
// Runs of 32 values as in Q2_K; each value is taken as q + 4 (0..7, unsigned for maddubs) and the 4 * scale *
// sum(activations) this adds is taken off with the activation block sums.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

#include <cstring>

namespace sluice::kernels::avx2 {
namespace {

// The 16 signed scales (bytes, group order) of a Q3_K scale field, as unpack_q3_k_scales gives them, in one
// register: low nibbles of bytes 0-7 (groups 0-7) and their high nibbles (groups 8-15), the top two bits from
// bytes 8-11 at shift 2 * (group / 4); stored +32. Reads only the 12 bytes of the field.
inline __m128i unpack_scales(const std::uint8_t* q) {
    std::uint64_t head;
    std::uint32_t tail;
    std::memcpy(&head, q, sizeof head);
    std::memcpy(&tail, q + 8, sizeof tail);
    const __m128i v = _mm_insert_epi32(_mm_cvtsi64_si128(static_cast<long long>(head)), static_cast<int>(tail), 2);
    const __m128i lo_src = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7));
    const __m128i lo = _mm_and_si128(_mm_blend_epi16(lo_src, _mm_srli_epi16(lo_src, 4), 0xf0), _mm_set1_epi8(0x0f));
    const __m128i hi_src = _mm_shuffle_epi8(v, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(hi_src, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

// The weight side of one super-block, unpacked once and shared by every token.
struct q3_weights {
    __m256i u[8];     // run k: 32 values q + 4
    __m256i scale[8]; // run k: scale 2k in the low 8 words, 2k+1 in the high 8 (signed)
    __m256i scales;   // the 16 scales as words
    float d;
};

inline void unpack(const block_q3_k& x, q3_weights& w) {
    w.scales = _mm256_cvtepi8_epi16(unpack_scales(x.scales));
    const __m256i halves[2] = {_mm256_permute2x128_si256(w.scales, w.scales, 0x00),
                               _mm256_permute2x128_si256(w.scales, w.scales, 0x11)};
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.hmask));
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    for (int h = 0; h < 2; ++h) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * h));
        for (int s = 0; s < 4; ++s) {
            const int k = 4 * h + s;
            const __m256i low = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * s), three);
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, k), one);
            w.u[k] = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
            // Words 2k % 8 and (2k + 1) % 8 of the half holding groups 2k and 2k+1, each broadcast to a lane.
            const char a = static_cast<char>(2 * ((2 * k) % 8)), b = static_cast<char>(2 * ((2 * k + 1) % 8));
            const char a1 = static_cast<char>(a + 1), b1 = static_cast<char>(b + 1);
            const __m256i pick = _mm256_setr_epi8(a, a1, a, a1, a, a1, a, a1, a, a1, a, a1, a, a1, a, a1, b, b1, b, b1,
                                                  b, b1, b, b1, b, b1, b, b1, b, b1, b, b1);
            w.scale[k] = _mm256_shuffle_epi8(halves[k / 4], pick);
        }
    }
    w.d = half(x.d);
}

// One super-block of one token added to its accumulator; dot_q3_k and dot4_q3_k share it.
inline void step(const q3_weights& w, const block_q8_k& y, __m256& acc) {
    __m256i sumi = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
        const __m256i p =
            _mm256_maddubs_epi16(w.u[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs + 32 * k)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, w.scale[k]));
    }
    const __m256i bias = _mm256_madd_epi16(w.scales, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
    sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(bias, 2));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y.d * w.d), _mm256_cvtepi32_ps(sumi), acc);
}

} // namespace

float dot_q3_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q3_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    __m256 acc = _mm256_setzero_ps();
    q3_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        step(qw, y[b], acc);
    }
    return hsum(acc);
}

void dot4_q3_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q3_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    q3_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        for (int t = 0; t < 4; ++t) {
            step(qw, y[t][b], acc[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = hsum(acc[t]);
    }
}

void dequantize_q3_k(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q3_k*>(src);
    q3_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        alignas(16) std::int8_t sc[16];
        unpack_q3_k_scales(x[b].scales, sc);
        for (int k = 0; k < 8; ++k, dst += 32) {
            const __m256i q = _mm256_sub_epi8(qw.u[k], _mm256_set1_epi8(4));
            store_mul_sub_i8(q, qw.d * static_cast<float>(sc[2 * k]), 0.0f, qw.d * static_cast<float>(sc[2 * k + 1]),
                             0.0f, dst);
        }
    }
}

} // namespace sluice::kernels::avx2
