// Weight layouts other than GGUF's row-major blocks: Q4_K rows interleaved sixteen at a time, so that one
// activation load feeds sixteen rows in the batched (prefill) and decode products.
#pragma once

#include "kernels/isa.hpp"
#include "kernels/quant_type.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

/// How the rows of a weight matrix are laid out in memory.
enum class weight_layout : std::uint8_t {
    rows,     ///< GGUF's layout: row r at w + r * row_bytes
    q4_k_x16, ///< Q4_K in groups of 16 rows, same bytes per group as the 16 rows it replaces (see below)
};

/// Rows per interleaved group.
inline constexpr std::size_t q4_k_x16_rows = 16;

/// False when SLUICE_REPACK is "0" or "off" (read once): every matrix keeps GGUF's layout, for A/B measurements.
bool repack_enabled() noexcept;

/// The layout a resident matrix of `type` with `rows` rows should take when the kernels run at `isa`:
/// q4_k_x16 for Q4_K with a multiple of 16 rows at the AVX-512 level (where its kernel exists and is faster),
/// else rows. Chosen once at load time.
weight_layout preferred_layout(quant_type type, std::size_t rows, isa_level isa = active_isa()) noexcept;

/// Rewrites `rows` rows of `cols` values (starting at `w`, rows contiguous) from GGUF's layout into `layout`,
/// in place; the matrix keeps its size in bytes and each group of 16 rows keeps its byte range, so row-range
/// offsets (and the stride of stacked experts) are unchanged. `rows` must be a multiple of 16 and `cols` of
/// 256 for q4_k_x16; rows is a no-op. Not thread-safe for overlapping ranges.
void repack_rows(weight_layout layout, void* w, std::size_t rows, std::size_t cols);

/// The inverse of repack_rows: back to GGUF's layout, bit for bit.
void unpack_rows(weight_layout layout, void* w, std::size_t rows, std::size_t cols);

} // namespace sluice::kernels
