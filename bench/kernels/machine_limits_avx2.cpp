// AVX2 parts of the machine limits: FMA throughput loop (10 independent accumulators hide the FMA latency)
// and a streaming read with 32-byte loads.
#include "bench/kernels/machine_limits.hpp"

#include <immintrin.h>

namespace sluice::bench {

double fma_loop_avx2(std::size_t iters) {
    __m256 acc[10];
    for (int k = 0; k < 10; ++k) {
        acc[k] = _mm256_set1_ps(static_cast<float>(k));
    }
    const __m256 a = _mm256_set1_ps(0.999999f);
    const __m256 b = _mm256_set1_ps(1e-7f);
    for (std::size_t i = 0; i < iters; ++i) {
        for (int k = 0; k < 10; ++k) {
            acc[k] = _mm256_fmadd_ps(acc[k], a, b);
        }
    }
    __m256 s = acc[0];
    for (int k = 1; k < 10; ++k) {
        s = _mm256_add_ps(s, acc[k]);
    }
    volatile float keep = _mm256_cvtss_f32(s);
    (void)keep;
    return static_cast<double>(iters) * 10 * 8 * 2;
}

std::uint64_t read_sum_avx2(const std::uint8_t* p, std::size_t bytes) {
    __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    for (std::size_t i = 0; i + 128 <= bytes; i += 128) {
        for (int k = 0; k < 4; ++k) {
            s[k] = _mm256_add_epi64(s[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32 * k)));
        }
    }
    const __m256i t = _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3]));
    alignas(32) std::uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), t);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

} // namespace sluice::bench
