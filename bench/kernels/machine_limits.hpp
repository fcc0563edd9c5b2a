// Physical limits measured in the benchmark's own run: memory read bandwidth and FMA peak per ISA.
#pragma once

#include "kernels/isa.hpp"
#include "runtime/compute/compute_pool.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::bench {

/// STREAM-style read: GB/s reading `bytes` of a buffer far larger than the LLC with `threads` threads
/// (the caller plus pool.size() workers), the best of six passes, half of them with light work per line.
double read_bandwidth_gbs(runtime::compute_pool& pool, std::size_t threads, const std::uint8_t* buf, std::size_t bytes);

/// Peak f32 GFLOP/s of one core at `isa` (FMA throughput loop), times `threads`.
double peak_gflops(kernels::isa_level isa, std::size_t threads, runtime::compute_pool& pool);

/// FMA loops for the peak, one per ISA (each built with its own flags). Return flops performed.
double fma_loop_avx2(std::size_t iters);
double fma_loop_avx512(std::size_t iters);

/// Sum of the 64-bit words of `bytes` (a multiple of 128) with 32-byte loads; needs AVX2.
std::uint64_t read_sum_avx2(const std::uint8_t* p, std::size_t bytes);
/// The same with 64-byte loads in address order (`bytes` a multiple of 256); needs AVX-512F/BW.
std::uint64_t read_sum_avx512(const std::uint8_t* p, std::size_t bytes);

/// read_sum_avx512 with a dependent chain of `work` 512-bit multiply-adds on each 64-byte line (work in
/// {0, 1, 2, 3, 4, 6, 8}; other values run 12); needs AVX-512F/BW. Measures how much a core's own work per line
/// costs its streaming rate from DRAM (kernels_bench overlap).
std::uint64_t read_work_avx512(const std::uint8_t* p, std::size_t bytes, int work);

/// Seconds since an arbitrary epoch (steady clock).
double now_seconds();

} // namespace sluice::bench
