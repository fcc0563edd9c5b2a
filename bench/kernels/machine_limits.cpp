// Memory read bandwidth and FMA peak measured on the machine the benchmark runs on.
#include "bench/kernels/machine_limits.hpp"

#include <chrono>
#include <cstring>
#include <vector>

namespace sluice::bench {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// Sums 64-bit words with four independent chains; the compiler vectorizes it (SSE2 at least).
std::uint64_t read_sum(const std::uint8_t* p, std::size_t bytes) {
    const std::size_t n = bytes / 8;
    std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t i = 0; i + 4 <= n; i += 4) {
        std::uint64_t w[4];
        std::memcpy(w, p + 8 * i, 32);
        s0 += w[0];
        s1 += w[1];
        s2 += w[2];
        s3 += w[3];
    }
    return s0 + s1 + s2 + s3;
}

} // namespace

/// The widest read loop the CPU runs, so the bound is not understated next to AVX-512 kernels.
std::uint64_t read_sum_best(const std::uint8_t* p, std::size_t bytes) {
    const auto isa = kernels::detect_isa();
    if (isa >= kernels::isa_level::avx512) {
        return read_sum_avx512(p, bytes);
    }
    return isa >= kernels::isa_level::avx2 ? read_sum_avx2(p, bytes) : read_sum(p, bytes);
}

double read_bandwidth_gbs(runtime::compute_pool& pool, std::size_t threads, const std::uint8_t* buf,
                          std::size_t bytes) {
    const std::size_t n = threads;
    const std::size_t chunk = bytes / n / 512 * 512;
    const bool avx512 = kernels::detect_isa() >= kernels::isa_level::avx512;
    std::vector<std::uint64_t> sink(n);
    double best = 0;
    for (int rep = 0; rep < 6; ++rep) {
        // Every other sample reads with four multiply-adds per line: on this VM two threads doing so read
        // 10-15 % faster than two bare read loops (kernels_bench overlap), so the bound is the better of both.
        const int work = avx512 && rep % 2 == 1 ? 4 : 0;
        const double t0 = now_seconds();
        pool.run_blocking(n, [&](std::size_t i) {
            const std::uint8_t* p = buf + i * chunk;
            sink[i] += work ? read_work_avx512(p, chunk, work) : read_sum_best(p, chunk);
        });
        const double dt = now_seconds() - t0;
        best = std::max(best, static_cast<double>(chunk * n) / dt / 1e9);
    }
    volatile std::uint64_t keep = sink[0];
    (void)keep;
    return best;
}

double peak_gflops(kernels::isa_level isa, std::size_t threads, runtime::compute_pool& pool) {
    const std::size_t iters = 4'000'000;
    std::vector<double> flops(threads);
    double best = 0;
    for (int rep = 0; rep < 2; ++rep) {
        const double t0 = now_seconds();
        pool.run_blocking(threads, [&](std::size_t i) {
            flops[i] = isa == kernels::isa_level::avx512 ? fma_loop_avx512(iters) : fma_loop_avx2(iters);
        });
        const double dt = now_seconds() - t0;
        double total = 0;
        for (double f : flops) {
            total += f;
        }
        best = std::max(best, total / dt / 1e9);
    }
    return best;
}

} // namespace sluice::bench
