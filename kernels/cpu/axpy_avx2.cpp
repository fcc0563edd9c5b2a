// AVX2+FMA axpy.
#include "kernels/cpu/axpy.hpp"

#include <immintrin.h>

namespace sluice::kernels {

void axpy_avx2(std::size_t n, float a, const float* x, float* y) noexcept {
    const __m256 va = _mm256_set1_ps(a);
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
        _mm256_storeu_ps(y + i + 8, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8)));
    }
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    }
    for (; i < n; ++i) {
        y[i] += a * x[i];
    }
}

} // namespace sluice::kernels
