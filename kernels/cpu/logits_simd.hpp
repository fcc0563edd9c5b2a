// Per-ISA logits reductions (internal; kernels/logits.hpp is the interface).
#pragma once

#include <cstddef>

namespace sluice::kernels {

float max_value_avx2(const float* x, std::size_t n) noexcept;
double sum_exp_avx2(const float* x, std::size_t n, float shift) noexcept;
float max_value_avx512(const float* x, std::size_t n) noexcept;
double sum_exp_avx512(const float* x, std::size_t n, float shift) noexcept;

} // namespace sluice::kernels
