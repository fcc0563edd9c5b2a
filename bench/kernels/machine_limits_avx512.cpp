// AVX-512 parts of the machine limits: the FMA throughput loop (10 independent accumulators hide the FMA
// latency), the streaming read, and the read with integer work per cache line (read_work_avx512).
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
    return read_work_avx512(p, bytes, 0);
}

namespace {

// Four 64-byte loads per step in address order, each followed by `Work` dependent 16-bit multiply-adds (the
// kind of work a quantized kernel does per line). The empty asm keeps the loads in that order: left to itself
// GCC folds them into the adds in a shuffled order, which measured 26 instead of 40 GB/s on one core here.
template <int Work>
std::uint64_t read_work(const std::uint8_t* p, std::size_t bytes) {
    const __m512i c = _mm512_set1_epi16(3);
    __m512i s[4];
    for (auto& v : s) {
        v = _mm512_setzero_si512();
    }
    for (std::size_t i = 0; i + 256 <= bytes; i += 256) {
        for (int k = 0; k < 4; ++k) {
            __m512i t = _mm512_loadu_si512(p + i + 64 * k);
            asm("" : "+v"(t));
            for (int w = 0; w < Work; ++w) {
                t = _mm512_madd_epi16(t, c);
            }
            s[k] = _mm512_add_epi64(s[k], t);
        }
    }
    for (int k = 1; k < 4; ++k) {
        s[0] = _mm512_add_epi64(s[0], s[k]);
    }
    return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(s[0]));
}

} // namespace

std::uint64_t read_work_avx512(const std::uint8_t* p, std::size_t bytes, int work) {
    switch (work) {
    case 0:
        return read_work<0>(p, bytes);
    case 1:
        return read_work<1>(p, bytes);
    case 2:
        return read_work<2>(p, bytes);
    case 3:
        return read_work<3>(p, bytes);
    case 4:
        return read_work<4>(p, bytes);
    case 6:
        return read_work<6>(p, bytes);
    case 8:
        return read_work<8>(p, bytes);
    default:
        return read_work<12>(p, bytes);
    }
}

} // namespace sluice::bench
