// AVX2 kernels for Q6_K weights: dot against Q8_K activations (one token, and four tokens for prefill) and
// dequantize.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx2.hpp"

namespace sluice::kernels::avx2 {
namespace {

// Int16 vector with scale s[0] in the low 128-bit lane and s[1] in the high lane.
inline __m256i scale_pair(const std::int8_t* s) {
    return _mm256_set_m128i(_mm_set1_epi16(s[1]), _mm_set1_epi16(s[0]));
}

/// Values 128h..128h+127 of a super-block (stored +32) as four 32-byte vectors in activation order.
inline void unpack_half(const block_q6_k& x, int h, __m256i (&q)[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const std::uint8_t* ql = x.ql + 64 * h;
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh + 32 * h));
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
    q[1] =
        _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
}

/// -32 * sum_g scale[g] * bsum[g]: removes the +32 storage offset from a super-block's integer sum.
inline __m256i offset_sum(__m256i sc16, const block_q8_k& y) {
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5));
}

} // namespace

float dot_q6_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q6_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        // Values are stored +32: start from the offset term, once per super-block.
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales)));
        __m256i sumi = offset_sum(sc16, y[b]);
        for (int h = 0; h < 2; ++h) {
            __m256i q[4];
            unpack_half(x[b], h, q);
            for (int k = 0; k < 4; ++k) {
                const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 128 * h + 32 * k));
                const __m256i p = _mm256_maddubs_epi16(q[k], a);
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair(x[b].scales + 8 * h + 2 * k)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * half(x[b].d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum(acc);
}

// Per token the float steps and accumulator of dot_q6_k, so each result is bit-identical to it; each half
// super-block's values and scales unpack once for the four tokens.
void dot4_q6_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q6_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales)));
        __m256i sumi[4];
        for (int t = 0; t < 4; ++t) {
            sumi[t] = offset_sum(sc16, y[t][b]);
        }
        for (int h = 0; h < 2; ++h) {
            __m256i q[4];
            unpack_half(x[b], h, q);
            for (int k = 0; k < 4; ++k) {
                const __m256i sp = scale_pair(x[b].scales + 8 * h + 2 * k);
                for (int t = 0; t < 4; ++t) {
                    const __m256i a =
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][b].qs + 128 * h + 32 * k));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[k], a), sp));
                }
            }
        }
        const float dx = half(x[b].d);
        for (int t = 0; t < 4; ++t) {
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t][b].d * dx), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = hsum(acc[t]);
    }
}

void dequantize_q6_k(const void* src, float* dst, std::size_t n) {
    const auto* x = static_cast<const block_q6_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = half(x[b].d);
        for (int i = 0; i < 256; i += 8) {
            const int h = i / 128, k = (i % 128) / 32, l = i % 32;
            const __m128i lb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[b].ql + 64 * h + l + 32 * (k % 2)));
            const __m128i hb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[b].qh + 32 * h + l));
            const __m256i lo = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(lb), k < 2 ? 0 : 4),
                                                _mm256_set1_epi32(0x0f));
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(hb), 2 * k), _mm256_set1_epi32(3));
            const __m256i q = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
            const __m256 s = _mm256_set1_ps(d * static_cast<float>(x[b].scales[i / 16]));
            _mm256_storeu_ps(dst + 256 * b + i, _mm256_mul_ps(s, _mm256_cvtepi32_ps(q)));
        }
    }
}

} // namespace sluice::kernels::avx2
