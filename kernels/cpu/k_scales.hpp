// Word-parallel unpacking of the Q4_K/Q5_K 12-byte scale field, for the SIMD files. Internal linkage on purpose:
// each ISA's translation unit gets its own copy, so no copy built with wider flags can replace another.
#pragma once

#include <cstdint>
#include <cstring>

namespace sluice::kernels {
namespace {

/// Unpacks the 12 scale bytes into 8 scales (out[0..7]) and 8 mins (out[8..15]).
inline void unpack_k_scales(const std::uint8_t* q, std::uint8_t* out) {
    std::uint32_t u[4];
    std::memcpy(u, q, 12);
    constexpr std::uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    u[3] = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4); // mins 4..7
    const std::uint32_t mins_lo = u[1] & low6;                  // mins 0..3
    u[1] = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);        // scales 4..7
    u[2] = mins_lo;
    u[0] &= low6;                                               // scales 0..3
    std::memcpy(out, u, 16);
}

} // namespace
} // namespace sluice::kernels
