// Scalar IEEE half and bfloat16 conversions, portable (no F16C); SIMD files convert with their own intrinsics.
#pragma once

#include <bit>
#include <cstdint>

namespace sluice::kernels {

/// Converts an IEEE 754 binary16 bit pattern to float (subnormals, inf and NaN included).
inline float fp16_to_f32(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1f;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits = 0;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x400000u : 0u); // NaNs come out quiet, as F16C does
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant != 0) {
        // Subnormal half: renormalise.
        int e = -1;
        do {
            ++e;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        bits = sign | static_cast<std::uint32_t>(112 - e) << 23 | ((mant & 0x3ffu) << 13);
    } else {
        bits = sign;
    }
    return std::bit_cast<float>(bits);
}

/// Converts float to binary16 with round-to-nearest-even; overflow gives inf, NaN stays NaN.
inline std::uint16_t f32_to_fp16(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {
        return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) { // rounds to >= 65520: overflow
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    if (abs < 0x38800000u) { // below the smallest normal half: subnormal or zero
        const float magic = std::bit_cast<float>(abs) + 0.5f; // 0.5 = 2^-1 aligns the half subnormal ulp
        return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(magic) - 0x3f000000u));
    }
    const std::uint32_t mant_odd = (abs >> 13) & 1u;
    const std::uint32_t rounded = abs + 0xc8000fffu + mant_odd; // rebias exponent (-112 << 23) and round
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

/// Converts a bfloat16 bit pattern to float (exact).
inline float bf16_to_f32(std::uint16_t h) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

/// Converts float to bfloat16 with round-to-nearest-even; NaN stays NaN.
inline std::uint16_t f32_to_bf16(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    }
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

} // namespace sluice::kernels
