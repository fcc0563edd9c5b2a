// AVX-512 FMA throughput loop: 10 independent accumulators hide the FMA latency.
#include "bench/kernels/machine_limits.hpp"

#include <immintrin.h>

namespace sluice::bench {

double fma_loop_avx512(std::size_t iters) {
    __m512 acc[10];
    for (int k = 0; k < 10; ++k) {
        acc[k] = _mm512_set1_ps(static_cast<float>(k));
    }
    const __m512 a = _mm512_set1_ps(0.999999f);
    const __m512 b = _mm512_set1_ps(1e-7f);
    for (std::size_t i = 0; i < iters; ++i) {
        for (int k = 0; k < 10; ++k) {
            acc[k] = _mm512_fmadd_ps(acc[k], a, b);
        }
    }
    __m512 s = acc[0];
    for (int k = 1; k < 10; ++k) {
        s = _mm512_add_ps(s, acc[k]);
    }
    volatile float keep = _mm512_cvtss_f32(s);
    (void)keep;
    return static_cast<double>(iters) * 10 * 16 * 2;
}

} // namespace sluice::bench
