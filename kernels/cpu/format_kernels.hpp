// Internal table entry: the row kernels one ISA provides for one weight format.
#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"

#include <cstddef>

namespace sluice::kernels {

/// The form activations take before a dot product with a weight format.
enum class act_format { f32, q8_0, q8_k };

/// Dequantizes `n` values (a multiple of the block size) from `src` to floats.
using dequantize_fn = void (*)(const void* src, float* dst, std::size_t n);
/// Returns the dot product of `n` weight values with `n` prepared activation values.
using dot_fn = float (*)(std::size_t n, const void* w, const void* act);
/// Dot products of one weight row with 4 prepared activation rows (row t at act + t*act_stride) into out[0..3];
/// each result equals what dot_fn gives up to float summation order. Shares the weight unpacking across tokens.
using dot4_fn = void (*)(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
/// dot4 for `n_rows` weight rows (row r at w + r*w_stride) into out[t*out_stride + r], bit-identical to calling
/// dot4 row by row; a format provides it where a tile of several rows shares the activation loads (F16 at AVX-512).
using dot4_rows_fn = void (*)(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                              std::size_t act_stride, float* out, std::size_t out_stride);
/// dot for `n_rows` weight rows (row r at w + r*w_stride) against one prepared activation row into out[r],
/// bit-identical to calling dot row by row; a format provides it where work on the activations can be done once per
/// call instead of once per row (decode).
using dot_rows_fn = void (*)(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                             float* out);
/// dot4 for 2 or 3 prepared activation rows (`n_tokens`), bit-identical to dot for each: the few tokens of an expert
/// in a step of several sequences share each weight block's unpacking as a group of four does.
using dot_few_fn = void (*)(std::size_t n, const void* w, const void* act, std::size_t act_stride, std::size_t n_tokens,
                            float* out);
/// Quantizes `n` floats (a multiple of the activation block) into prepared activation blocks.
using prepare_fn = void (*)(const float* src, void* dst, std::size_t n);

struct format_kernels {
    act_format act;
    dequantize_fn dequantize;
    dot_fn dot;
    dot4_fn dot4 = nullptr;           ///< optional multi-token kernel for prefill
    dot4_rows_fn dot4_rows = nullptr; ///< optional several-row form of dot4 (needs dot4)
    dot_rows_fn dot_rows = nullptr;   ///< optional several-row form of dot (one token)
    dot_few_fn dot_few = nullptr;     ///< optional 2- and 3-token kernel (needs dot4)
};

/// Per-ISA tables; a null result means the format has no kernels at that level.
const format_kernels* scalar_format_kernels(quant_type type) noexcept;
const format_kernels* avx2_format_kernels(quant_type type) noexcept;
const format_kernels* avx512_format_kernels(quant_type type) noexcept;

/// Activation quantizers per ISA (Q8_0 and Q8_K).
prepare_fn prepare_kernel(isa_level isa, act_format act) noexcept;

/// Kernels for `type` at `isa` (falling back to lower levels for formats an ISA lacks), or null.
const format_kernels* find_format_kernels(isa_level isa, quant_type type) noexcept;

} // namespace sluice::kernels
