// AVX2 kernels for Q4_K weights: dot against Q8_K activations (one token, and four tokens for prefill) and
// dequantize.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/k_scales.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {
namespace {

/// Minimum term of one super-block: lane i holds m[2i] * (bsum[4i] + bsum[4i+1]) + m[2i+1] * (...).
inline __m128i mins_sum(__m128i mins, const block_q8_k& y) {
    const __m128i bs_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y.bsums));
    const __m128i bs_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y.bsums + 8));
    return _mm_madd_epi16(mins, _mm_hadd_epi16(bs_lo, bs_hi));
}

/// The result from the value and minimum accumulators, in the order dot_q4_k and dot4_q4_k share.
inline float finish(__m256 acc, __m128 acc_m) {
    __m128 m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return hsum(acc) + _mm_cvtss_f32(m);
}

} // namespace

float dot_q4_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const __m256i low_mask = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const float d = y[b].d * half(x[b].d);
        const float dmin = -y[b].d * half(x[b].dmin);
        // Mins: sum over groups of m[g] * (bsum[2g] + bsum[2g+1]).
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins_sum(mins, y[b])), acc_m);
        // Scaled values: each 32-byte chunk holds group 2c (low nibbles) and group 2c+1 (high nibbles).
        __m256i sumi = _mm256_setzero_si256();
        const std::uint8_t* q4 = x[b].qs;
        const std::int8_t* q8 = y[b].qs;
        for (int c = 0; c < 4; ++c, q4 += 32, q8 += 64) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q4));
            const __m256i lo = _mm256_and_si256(raw, low_mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_mask);
            const __m256i p_lo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8)));
            const __m256i p_hi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + 32)));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(sm[2 * c])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(sm[2 * c + 1])));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return finish(acc, acc_m);
}

// Per token the float steps and accumulators of dot_q4_k, so each result is bit-identical to it; the scales and
// the nibbles of each super-block unpack once for the four tokens.
void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const __m256i low_mask = _mm256_set1_epi8(0x0f);
    __m256 acc[4];
    __m128 acc_m[4];
    for (int t = 0; t < 4; ++t) {
        acc[t] = _mm256_setzero_ps();
        acc_m[t] = _mm_setzero_ps();
    }
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const float dx = half(x[b].d);
        const float dmx = half(x[b].dmin);
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
        for (int t = 0; t < 4; ++t) {
            const float dmin = -y[t][b].d * dmx;
            acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins_sum(mins, y[t][b])), acc_m[t]);
        }
        // Chunk c: group 2c in the low nibbles, group 2c+1 in the high ones, shared by the four tokens.
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                           _mm256_setzero_si256()};
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * c));
            const __m256i lo = _mm256_and_si256(raw, low_mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_mask);
            const __m256i s_lo = _mm256_set1_epi16(sm[2 * c]);
            const __m256i s_hi = _mm256_set1_epi16(sm[2 * c + 1]);
            for (int t = 0; t < 4; ++t) {
                const std::int8_t* q8 = y[t][b].qs + 64 * c;
                const __m256i p_lo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8)));
                const __m256i p_hi =
                    _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + 32)));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p_lo, s_lo));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p_hi, s_hi));
            }
        }
        for (int t = 0; t < 4; ++t) {
            const float d = y[t][b].d * dx;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = finish(acc[t], acc_m[t]);
    }
}

void dequantize_q4_k(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q4_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        alignas(16) std::uint8_t sm[16];
        unpack_k_scales(x[b].scales, sm);
        const float d = half(x[b].d);
        const float dmin = half(x[b].dmin);
        for (int g = 0; g < 8; ++g, dst += 32) {
            const __m256 ds = _mm256_set1_ps(d * sm[g]);
            const __m256 dm = _mm256_set1_ps(dmin * sm[8 + g]);
            const std::uint8_t* q = x[b].qs + 32 * (g / 2);
            const int shift = (g % 2) * 4;
            for (int k = 0; k < 4; ++k) {
                const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * k));
                const __m256i v = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(bytes), shift),
                                                   _mm256_set1_epi32(0x0f));
                _mm256_storeu_ps(dst + 8 * k, _mm256_fmsub_ps(ds, _mm256_cvtepi32_ps(v), dm));
            }
        }
    }
}

} // namespace sluice::kernels::avx2
