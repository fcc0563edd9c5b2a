// AVX-512F axpy with a masked tail.
#include "kernels/cpu/axpy.hpp"

#include <immintrin.h>

namespace sluice::kernels {

void axpy_avx512(std::size_t n, float a, const float* x, float* y) noexcept {
    const __m512 va = _mm512_set1_ps(a);
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    }
    if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m,
                              _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

} // namespace sluice::kernels
