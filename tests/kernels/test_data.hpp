// Random test data for kernel tests: valid weight rows of any format, float rows, and float references.
#pragma once

#include "kernels/quant_type.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace sluice::kernels::test {

/// Every format that has kernels.
const std::vector<quant_type>& all_formats();

/// `n` floats drawn from N(0, 1), with a few outliers so block scales vary.
std::vector<float> random_floats(std::mt19937& rng, std::size_t n);

/// `rows` rows of `cols` values of `type` with random payload and finite, varied scale fields.
std::vector<std::uint8_t> random_weights(std::mt19937& rng, quant_type type, std::size_t rows, std::size_t cols);

/// Dequantized copy of a weight matrix through the scalar reference.
std::vector<float> reference_dequantize(quant_type type, const std::uint8_t* w, std::size_t rows, std::size_t cols);

/// Block size of the activation quantization the format's dot product uses (1 for float formats).
std::size_t act_block(quant_type type);

/// A column count that is a multiple of the format's blocks: `blocks` blocks of the coarser of
/// the weight block and the activation block.
std::size_t cols_for(quant_type type, std::size_t blocks);

} // namespace sluice::kernels::test
