// The lattice grids of the IQ1/IQ2/IQ3 formats and their sign patterns. A grid row is 8 (IQ1, IQ2) or 4 (IQ3)
// byte values, little-endian in one word, so a kernel loads a whole row with one read; every index a block can
// hold is a valid row (an index has exactly as many bits as its grid has rows).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace sluice::kernels {

extern const std::uint64_t iq2xxs_grid[256]; ///< IQ2_XXS rows, values 8, 25, 43
extern const std::uint64_t iq2xs_grid[512];  ///< IQ2_XS rows, values 8, 25, 43
extern const std::uint64_t iq2s_grid[1024];  ///< IQ2_S rows, values 8, 25, 43
extern const std::uint32_t iq3xxs_grid[256]; ///< IQ3_XXS rows, values 4, 12, ..., 52, 62
extern const std::uint32_t iq3s_grid[512];   ///< IQ3_S rows, odd values 1..15
extern const std::uint64_t iq1s_grid[2048];  ///< IQ1_S/IQ1_M rows, values -1, 0, 1 as int8

/// Sign patterns of IQ2_XXS, IQ2_XS and IQ3_XXS: a 7-bit index gives the signs of 8 values (bit j set: value j is
/// negative), the eighth bit chosen so the number of negatives is even.
inline constexpr std::array<std::uint8_t, 128> iq_signs = [] {
    std::array<std::uint8_t, 128> t{};
    for (unsigned i = 0; i < 128; ++i) {
        t[i] = static_cast<std::uint8_t>(i | ((std::popcount(i) & 1u) << 7));
    }
    return t;
}();

} // namespace sluice::kernels
