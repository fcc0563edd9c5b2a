// y += a * x over float rows, per ISA (internal): the accumulation step of attention's weighted value sums.
#pragma once

#include "kernels/isa.hpp"

#include <cstddef>

namespace sluice::kernels {

/// y[i] += a * x[i] for i < n.
using axpy_fn = void (*)(std::size_t n, float a, const float* x, float* y);

/// The scalar reference.
void axpy_scalar(std::size_t n, float a, const float* x, float* y) noexcept;
/// AVX2+FMA (eight lanes, fused multiply-add; the tail in scalar).
void axpy_avx2(std::size_t n, float a, const float* x, float* y) noexcept;
/// AVX-512F (sixteen lanes, masked tail).
void axpy_avx512(std::size_t n, float a, const float* x, float* y) noexcept;

/// The kernel for `isa`, capped at what this machine runs.
axpy_fn axpy_kernel(isa_level isa) noexcept;

} // namespace sluice::kernels
