// FP8 E4M3 decoding through a 256-entry table, and block-scale application.
#include "runtime/convert/fp8.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace sluice::convert {

namespace {

float decode(std::uint8_t v) {
    const bool negative = (v & 0x80) != 0;
    const int exponent = (v >> 3) & 0xF;
    const int mantissa = v & 0x7;
    float magnitude;
    if (exponent == 0xF && mantissa == 0x7) {
        magnitude = std::numeric_limits<float>::quiet_NaN();
    } else if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa) / 8.0f, -6); // subnormal
    } else {
        magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
    }
    return negative ? -magnitude : magnitude;
}

const std::array<float, 256>& table() {
    static const std::array<float, 256> t = [] {
        std::array<float, 256> out{};
        for (int i = 0; i < 256; ++i) {
            out[static_cast<std::size_t>(i)] = decode(static_cast<std::uint8_t>(i));
        }
        return out;
    }();
    return t;
}

} // namespace

float fp8_e4m3_to_float(std::uint8_t v) noexcept {
    return table()[v];
}

void fp8_e4m3_to_float(const std::uint8_t* src, float* dst, std::size_t n) noexcept {
    const auto& t = table();
    for (std::size_t i = 0; i < n; ++i) {
        dst[i] = t[src[i]];
    }
}

void apply_block_scales(float* rows, std::uint64_t first_row, std::uint64_t n_rows, std::uint64_t cols,
                        const float* scales, std::uint64_t scale_cols, std::uint32_t block_rows,
                        std::uint32_t block_cols) noexcept {
    const std::uint64_t first_block_row = first_row / block_rows;
    for (std::uint64_t r = 0; r < n_rows; ++r) {
        const float* s = scales + ((first_row + r) / block_rows - first_block_row) * scale_cols;
        float* row = rows + r * cols;
        for (std::uint64_t c = 0; c < cols; ++c) {
            row[c] *= s[c / block_cols];
        }
    }
}

} // namespace sluice::convert
