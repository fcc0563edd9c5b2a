// gpt-oss checkpoints ship their experts in MXFP4 as two uint8 tensors per matrix (`*_blocks` [E, rows, cols/32, 16]
// and `*_scales` [E, rows, cols/32]); this repacks them into GGUF's MXFP4 blocks without changing a value.
#pragma once

#include "runtime/convert/safetensors.hpp"
#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>

namespace sluice::convert {

/// Bytes of one Hugging Face MXFP4 block (32 values, two per byte) and of one GGUF block_mxfp4 (scale + 16).
inline constexpr std::size_t hf_mxfp4_block_bytes = 16;
inline constexpr std::size_t gguf_mxfp4_block_bytes = 17;

/// Repacks one row of `n_blocks` blocks. `blocks` holds 16 bytes per block, value 2i in the low nibble of byte i
/// and 2i+1 in the high nibble (the order transformers' convert_moe_packed_tensors reads); `scales` one E8M0 byte
/// per block. Writes n_blocks GGUF blocks of 17 bytes: the scale, then value j in the low nibble of qs[j] and
/// j+16 in the high. The 4-bit codes and scale bytes are copied as they are: both formats index the same E2M1
/// table (GGML stores it doubled and halves the scale), so every value stays exactly what it was.
void repack_mxfp4_row(const std::uint8_t* blocks, const std::uint8_t* scales, std::size_t n_blocks,
                      std::uint8_t* out) noexcept;

/// Checks that `blocks` and `scales` hold `experts` matrices of `rows` x `cols` values in MXFP4: U8 tensors of
/// shapes [experts, rows, cols/32, 16] and [experts, rows, cols/32], cols a multiple of 32. Errors name the tensor,
/// its shape and the one expected.
result<void> check_mxfp4_pair(const st_tensor& blocks, const st_tensor& scales, std::uint64_t experts,
                              std::uint64_t rows, std::uint64_t cols);

} // namespace sluice::convert
