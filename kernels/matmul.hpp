// Matrix products of quantized weights with activation rows: decode (one row), prefill (many), MoE experts.
#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"
#include "kernels/repack.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// Bytes of one activation row of `cols` values prepared for weights of `type` (Q8_0 blocks for the
/// 32-formats, Q8_K blocks for the K-formats and IQ4_XS, plain floats for F32/F16/BF16).
std::size_t prepared_row_bytes(quant_type type, std::size_t cols) noexcept;

/// Prepares `n_rows` activation rows (row i at x + i*x_stride floats) for products with weights of `type`;
/// row i is written at out + i*prepared_row_bytes(type, cols). `cols` must be a multiple of the block size.
void prepare_activations(quant_type type, const float* x, std::size_t x_stride, std::size_t n_rows, std::size_t cols,
                         void* out, isa_level isa = active_isa());

/// y[t*y_stride + r] = dot(weight row r, prepared activation row t) for r in [row_begin, row_end) and
/// t in [0, n_tokens). Weight row r starts at w + r*w_row_bytes. Each weight row is read from memory once
/// per call (tokens loop inside a tile of rows). Thread-safe for disjoint row ranges: the compute pool
/// splits rows across threads.
void matmul_prepared(quant_type type, const void* w, std::size_t w_row_bytes, std::size_t row_begin,
                     std::size_t row_end, std::size_t cols, const void* act, std::size_t n_tokens, float* y,
                     std::size_t y_stride, isa_level isa = active_isa());

/// One-thread convenience: y[t*rows + r] = W[r] . x[t*cols ...] for a dense `rows` x `cols` matrix of `type`.
void matmul(quant_type type, const void* w, std::size_t rows, std::size_t cols, const float* x, std::size_t n_tokens,
            float* y, isa_level isa = active_isa());

/// Rows of selected experts (MoE). For each selection s in [0, n_sel):
///   y[o*y_stride + r] = dot(row r of expert_weights[sel_expert[s]], prepared activation row sel_token[s])
/// for r in [row_begin, row_end), with output row o = sel_out[s] (o = s when sel_out is null). Experts may live
/// in different buffers; selections routed to the same expert share each weight load (in groups taken in
/// selection order, so an expert's results do not depend on which other experts share the call). Only the
/// experts named in sel_expert are read.
void matmul_experts(quant_type type, const void* const* expert_weights, std::size_t w_row_bytes,
                    std::size_t row_begin, std::size_t row_end, std::size_t cols, const void* act,
                    const std::int32_t* sel_expert, const std::int32_t* sel_token, std::size_t n_sel, float* y,
                    std::size_t y_stride, const std::int32_t* sel_out = nullptr, isa_level isa = active_isa());

/// matmul_prepared for weights stored in `layout` (kernels/repack.hpp); `rows` is the function above. Row ranges
/// need not be aligned to a layout's groups. Results are bit-identical to the rows layout at the AVX-512 level
/// (both follow the scalar reference's float steps there), so a model may hold some matrices repacked.
void matmul_prepared(quant_type type, weight_layout layout, const void* w, std::size_t w_row_bytes,
                     std::size_t row_begin, std::size_t row_end, std::size_t cols, const void* act,
                     std::size_t n_tokens, float* y, std::size_t y_stride, isa_level isa = active_isa());

/// matmul_experts for expert matrices stored in `layout`; every token of an expert shares its weight loads.
void matmul_experts(quant_type type, weight_layout layout, const void* const* expert_weights, std::size_t w_row_bytes,
                    std::size_t row_begin, std::size_t row_end, std::size_t cols, const void* act,
                    const std::int32_t* sel_expert, const std::int32_t* sel_token, std::size_t n_sel, float* y,
                    std::size_t y_stride, const std::int32_t* sel_out = nullptr, isa_level isa = active_isa());

} // namespace sluice::kernels
