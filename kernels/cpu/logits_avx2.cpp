// AVX2+FMA logits reductions: eight lanes, the tail in scalar; exp in float by range reduction to [-ln2/2, ln2/2], a
// degree-6 polynomial and the exponent built in the integer unit, the terms added in double.
#include "kernels/cpu/logits_simd.hpp"

#include <immintrin.h>

#include <cmath>
#include <limits>

namespace sluice::kernels {

namespace {

// exp(t) for t <= 0; below -87 the result is about 1.6e-38 instead of less (nothing a sum of terms up to 1 sees).
inline __m256 exp_nonpositive(__m256 t) {
    t = _mm256_max_ps(t, _mm256_set1_ps(-87.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

} // namespace

float max_value_avx2(const float* x, std::size_t n) noexcept {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    __m256 best = _mm256_set1_ps(neg_inf);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        best = _mm256_max_ps(_mm256_loadu_ps(x + i), best); // NaN in x: `best` kept
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, best);
    float out = neg_inf;
    for (const float v : lanes) {
        out = v > out ? v : out;
    }
    for (; i < n; ++i) {
        out = x[i] > out ? x[i] : out;
    }
    return out;
}

double sum_exp_avx2(const float* x, std::size_t n, float shift) noexcept {
    const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    const __m256 s = _mm256_set1_ps(shift);
    __m256d lo = _mm256_setzero_pd();
    __m256d hi = _mm256_setzero_pd();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 valid = _mm256_cmp_ps(v, neg_inf, _CMP_GT_OQ); // not -inf, not NaN
        const __m256 e = _mm256_and_ps(valid, exp_nonpositive(_mm256_sub_ps(v, s)));
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(lo, hi));
    double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; ++i) {
        if (x[i] > -std::numeric_limits<float>::infinity()) {
            sum += std::exp(static_cast<double>(x[i]) - shift);
        }
    }
    return sum;
}

} // namespace sluice::kernels
