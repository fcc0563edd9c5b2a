// Repacking Hugging Face MXFP4 rows into GGUF blocks, and the shape checks that guard it.
#include "runtime/convert/mxfp4_import.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <string>

namespace sluice::convert {

void repack_mxfp4_row(const std::uint8_t* blocks, const std::uint8_t* scales, std::size_t n_blocks,
                      std::uint8_t* out) noexcept {
    for (std::size_t b = 0; b < n_blocks; ++b) {
        const std::uint8_t* in = blocks + b * hf_mxfp4_block_bytes;
        std::uint8_t* o = out + b * gguf_mxfp4_block_bytes;
        // Value k of the block sits in byte k/2 of the input, low nibble for even k.
        const auto code = [in](std::size_t k) { return (in[k / 2] >> (4 * (k % 2))) & 0x0F; };
        o[0] = scales[b];
        for (std::size_t j = 0; j < 16; ++j) {
            o[1 + j] = static_cast<std::uint8_t>(code(j) | code(j + 16) << 4);
        }
    }
}

result<void> check_mxfp4_pair(const st_tensor& blocks, const st_tensor& scales, std::uint64_t experts,
                              std::uint64_t rows, std::uint64_t cols) {
    const auto fail = [](const st_tensor& t, std::span<const std::uint64_t> want) -> result<void> {
        return make_error(std::errc::invalid_argument, "tensor " + t.name + ": MXFP4 " + t.dtype_name + " " +
                                                           shape_string(t.shape) + ", expected U8 " +
                                                           shape_string(want));
    };
    const std::array<std::uint64_t, 4> want_blocks{experts, rows, cols / 32, hf_mxfp4_block_bytes};
    const std::array<std::uint64_t, 3> want_scales{experts, rows, cols / 32};
    if (cols % 32 != 0) {
        return make_error(std::errc::invalid_argument, "tensor " + blocks.name +
                                                           ": MXFP4 needs rows of a multiple "
                                                           "of 32 values, the model has " +
                                                           std::to_string(cols));
    }
    if (blocks.dtype != st_dtype::u8 ||
        !std::equal(blocks.shape.begin(), blocks.shape.end(), want_blocks.begin(), want_blocks.end())) {
        return fail(blocks, want_blocks);
    }
    if (scales.dtype != st_dtype::u8 ||
        !std::equal(scales.shape.begin(), scales.shape.end(), want_scales.begin(), want_scales.end())) {
        return fail(scales, want_scales);
    }
    return {};
}

} // namespace sluice::convert
