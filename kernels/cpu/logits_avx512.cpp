// AVX-512F logits reductions: sixteen lanes, masked tails; exp in float by range reduction to [-ln2/2, ln2/2], a
// degree-6 polynomial and scalef, the terms added in double.
#include "kernels/cpu/logits_simd.hpp"

#include <immintrin.h>

#include <limits>

namespace sluice::kernels {

namespace {

// exp(t) for t <= 0 (below -104 the result is 0 or subnormal; scalef handles the range without overflow).
inline __m512 exp_nonpositive(__m512 t) {
    t = _mm512_max_ps(t, _mm512_set1_ps(-104.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // r = t - n ln2, with ln2 split so that n * ln2_hi is exact.
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

} // namespace

float max_value_avx512(const float* x, std::size_t n) noexcept {
    const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512 best = neg_inf;
    std::size_t i = 0;
    // max(x, best) returns its second operand when x is NaN, so NaN never enters `best`.
    for (; i + 16 <= n; i += 16) {
        best = _mm512_max_ps(_mm512_loadu_ps(x + i), best);
    }
    if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        best = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, m, x + i), best);
    }
    return _mm512_reduce_max_ps(best);
}

double sum_exp_avx512(const float* x, std::size_t n, float shift) noexcept {
    const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    const __m512 s = _mm512_set1_ps(shift);
    __m512d lo = _mm512_setzero_pd();
    __m512d hi = _mm512_setzero_pd();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 in_row = n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
        const __m512 v = _mm512_mask_loadu_ps(neg_inf, in_row, x + i);
        const __mmask16 valid = _mm512_cmp_ps_mask(v, neg_inf, _CMP_GT_OQ); // not -inf, not NaN
        const __m512 e = _mm512_maskz_mov_ps(valid, exp_nonpositive(_mm512_sub_ps(v, s)));
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

} // namespace sluice::kernels
