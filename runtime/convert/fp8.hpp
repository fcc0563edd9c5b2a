// FP8 weights as DeepSeek-V3 and Kimi-K2 ship them: float8_e4m3fn values with one float32 dequantisation
// multiplier (`weight_scale_inv`) per block of rows x columns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::convert {

/// float8_e4m3fn to float: 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits, subnormals below exponent 1,
/// no infinities; 0x7F and 0xFF are NaN.
float fp8_e4m3_to_float(std::uint8_t v) noexcept;

/// Widens `n` float8_e4m3fn values.
void fp8_e4m3_to_float(const std::uint8_t* src, float* dst, std::size_t n) noexcept;

/// Multiplies `n_rows` rows of `cols` values (rows first_row.. of the weight) by their blocks' multipliers.
/// `scales` holds the scale rows from first_row / block_rows on, `scale_cols` values each (ceil(cols / block_cols)).
void apply_block_scales(float* rows, std::uint64_t first_row, std::uint64_t n_rows, std::uint64_t cols,
                        const float* scales, std::uint64_t scale_cols, std::uint32_t block_rows,
                        std::uint32_t block_cols) noexcept;

} // namespace sluice::convert
