// Row-level weight format operations: dequantize, quantize from float, and the activation form a format uses.
#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"

#include <cstddef>

namespace sluice::kernels {

/// True when Sluice has dequantize and dot kernels for `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
/// Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4).
bool has_kernels(quant_type type) noexcept;

/// True when quantize_row() accepts `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, MXFP4).
bool can_quantize(quant_type type) noexcept;

/// True when scale_random_blocks() accepts `type`: the formats Sluice reads but cannot quantize (IQ1_S, IQ1_M,
/// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, TQ1_0, TQ2_0). Their quantizers need an importance matrix (or, for TQ,
/// ternary-trained weights); random blocks of them are still valid weights for tests and benchmarks.
bool can_scale_random_blocks(quant_type type) noexcept;

/// Makes `n_blocks` blocks of random bytes at `blocks` valid weights of `type` whose values have a root mean
/// square of about `rms`: each block keeps its random grid indices, signs and sub-scales and gets the f16 super-scale
/// that gives it that RMS. can_scale_random_blocks(type) must hold. Deterministic, thread-safe.
void scale_random_blocks(quant_type type, void* blocks, std::size_t n_blocks, float rms);

/// Dequantizes `n` values of `type` from `src` into `dst`. `n` must be a multiple of the block size and
/// has_kernels(type) must hold. Thread-safe; `isa` picks the kernel level (capped by the machine).
void dequantize_row(quant_type type, const void* src, float* dst, std::size_t n, isa_level isa = active_isa());

/// Quantizes `n` floats (a multiple of the block size) to `type` into `dst` (row_bytes(type, n) bytes).
/// can_quantize(type) must hold. Deterministic, thread-safe.
void quantize_row(quant_type type, const float* src, void* dst, std::size_t n);

} // namespace sluice::kernels
