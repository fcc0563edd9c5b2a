// Layout choice and in-place repacking of resident weights (kernels/repack.hpp).
#include "kernels/repack.hpp"

#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/q4_k_x16.hpp"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace sluice::kernels {

bool repack_enabled() noexcept {
    static const bool enabled = [] {
        const char* v = std::getenv("SLUICE_REPACK");
        return v == nullptr || (std::string_view(v) != "0" && std::string_view(v) != "off");
    }();
    return enabled;
}

weight_layout preferred_layout(quant_type type, std::size_t rows, isa_level isa) noexcept {
    const bool avx512 = std::min(isa, detect_isa()) == isa_level::avx512;
    if (repack_enabled() && type == quant_type::q4_k && rows > 0 && rows % q4_k_x16_rows == 0 && avx512) {
        return weight_layout::q4_k_x16;
    }
    return weight_layout::rows;
}

namespace {

// Each group of 16 rows through a scratch copy (the layout keeps each group's byte range).
template <class Fn>
void each_group(void* w, std::size_t rows, std::size_t cols, Fn fn) {
    assert(rows % q4_k_x16_rows == 0 && cols % qk_k == 0);
    const std::size_t n_blocks = cols / qk_k;
    const std::size_t group_bytes = q4_k_x16_rows * n_blocks * sizeof(block_q4_k);
    std::vector<std::uint8_t> scratch(group_bytes);
    auto* base = static_cast<std::uint8_t*>(w);
    for (std::size_t g = 0; g < rows / q4_k_x16_rows; ++g) {
        std::uint8_t* group = base + g * group_bytes;
        std::memcpy(scratch.data(), group, group_bytes);
        fn(scratch.data(), group, n_blocks);
    }
}

} // namespace

void repack_rows(weight_layout layout, void* w, std::size_t rows, std::size_t cols) {
    if (layout != weight_layout::q4_k_x16) {
        return;
    }
    each_group(w, rows, cols, [cols](const std::uint8_t* from, std::uint8_t* to, std::size_t n_blocks) {
        pack_q4_k_x16(from, cols / qk_k * sizeof(block_q4_k), n_blocks, to);
    });
}

void unpack_rows(weight_layout layout, void* w, std::size_t rows, std::size_t cols) {
    if (layout != weight_layout::q4_k_x16) {
        return;
    }
    each_group(w, rows, cols, [cols](const std::uint8_t* from, std::uint8_t* to, std::size_t n_blocks) {
        unpack_q4_k_x16(from, n_blocks, to, cols / qk_k * sizeof(block_q4_k));
    });
}

} // namespace sluice::kernels
