// Internal: the q4_k_x16 layout (kernels/repack.hpp), sixteen Q4_K rows interleaved block by block.
//
// Group g of a matrix holds rows 16g..16g+15 in the byte range those rows had in GGUF's layout; within it,
// super-block column b (values 256b..256b+255 of each row) is one block_q4_k_x16 of 2304 bytes (16 x 144):
//   d[r], dmin[r]   row r's f16 super-scales, as in the row's block_q4_k;
//   scales_lo       byte 16s + r: the low 4 bits of row r's scale s (bits 0-3) and of its min s (bits 4-7);
//   scales_hi       byte 16(s % 4) + r: the high 2 bits of row r's scale and min s, at bits 0-1 / 2-3 for s < 4
//                   and 4-5 / 6-7 for s >= 4 (so one shift and mask lines them up with scales_lo's 64-byte halves);
//   qs              64 bytes per (group of 32 values s, run p of 8 values): byte 4r + i holds row r's value
//                   32s + 8p + i in its low nibble and value 32s + 8p + 4 + i in its high nibble, so the low
//                   nibbles are four consecutive values of each of the 16 rows (one VNNI dot per row and token).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

struct block_q4_k_x16 {
    std::uint16_t d[16];
    std::uint16_t dmin[16];
    std::uint8_t scales_lo[128];
    std::uint8_t scales_hi[64];
    std::uint8_t qs[2048];
};
static_assert(sizeof(block_q4_k_x16) == 16 * 144);

/// One group (16 rows of `n_blocks` super-blocks, `row_bytes` apart) into interleaved blocks at `dst`, and back.
/// `src` and `dst` must not overlap.
void pack_q4_k_x16(const void* src, std::size_t row_bytes, std::size_t n_blocks, void* dst);
void unpack_q4_k_x16(const void* src, std::size_t n_blocks, void* dst, std::size_t row_bytes);

namespace avx512 {
/// out[t][16g + r] = dot(row r of group g, activation row t) for g < n_groups and t < n_tokens: groups of the
/// q4_k_x16 layout (`cols` values per row) at w, Q8_K activation rows at act + t * act_stride. Bit-identical
/// to the scalar dot_q4_k of each row.
void matmul_q4_k_x16(std::size_t cols, const void* w, std::size_t n_groups, const void* act, std::size_t act_stride,
                     std::size_t n_tokens, float* const* out);
} // namespace avx512

} // namespace sluice::kernels
