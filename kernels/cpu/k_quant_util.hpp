// Shared steps of the Q4_K/Q5_K quantizers: fitting 6-bit group scales and mins, then rounding the values.
#pragma once

#include <cstdint>

namespace sluice::kernels::scalar {

/// Scales of one 256-value super-block: f16 super-scales and 8 six-bit group scales and mins.
struct k_group_scales {
    std::uint16_t d, dmin;
    std::uint8_t sc[8], m[8];
};

/// Fits x ~ d*sc[g]*q - dmin*m[g] with q in [0, q_max] for each group g of 32 values.
k_group_scales fit_k_group_scales(const float* x, int q_max);

/// Rounds the 256 values of `x` to q in [0, q_max] under the fitted scales.
void quantize_k_groups(const float* x, const k_group_scales& gs, int q_max, std::uint8_t* q);

} // namespace sluice::kernels::scalar
