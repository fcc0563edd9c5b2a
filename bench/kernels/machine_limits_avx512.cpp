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

std::uint64_t read_sum_avx512(const std::uint8_t* p, std::size_t bytes) {
    // Eight independent 64-byte loads per step keep as many cache-line misses in flight as the widest kernels do.
    __m512i s[8];
    for (auto& v : s) {
        v = _mm512_setzero_si512();
    }
    for (std::size_t i = 0; i + 512 <= bytes; i += 512) {
        for (int k = 0; k < 8; ++k) {
            s[k] = _mm512_add_epi64(s[k], _mm512_loadu_si512(p + i + 64 * k));
        }
    }
    for (int k = 1; k < 8; ++k) {
        s[0] = _mm512_add_epi64(s[0], s[k]);
    }
    return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(s[0]));
}

} // namespace sluice::bench
