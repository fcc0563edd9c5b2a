// Q4_K/Q5_K scale fitting: per group an asymmetric range, then 6-bit quantization of scales and mins.
#include "kernels/cpu/k_quant_util.hpp"

#include "kernels/cpu/fp16.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::kernels::scalar {

k_group_scales fit_k_group_scales(const float* x, int q_max) {
    float scale[8];
    float min[8];
    float max_scale = 0;
    float max_min = 0;
    for (int g = 0; g < 8; ++g) {
        float lo = 0;
        float hi = 0;
        for (int l = 0; l < 32; ++l) {
            lo = std::min(lo, x[32 * g + l]);
            hi = std::max(hi, x[32 * g + l]);
        }
        scale[g] = (hi - lo) / static_cast<float>(q_max);
        min[g] = -lo;
        max_scale = std::max(max_scale, scale[g]);
        max_min = std::max(max_min, min[g]);
    }
    k_group_scales gs{};
    gs.d = f32_to_fp16(max_scale / 63.0f);
    gs.dmin = f32_to_fp16(max_min / 63.0f);
    const float d = fp16_to_f32(gs.d);
    const float dmin = fp16_to_f32(gs.dmin);
    for (int g = 0; g < 8; ++g) {
        // Round the scale up so the group's range still fits in [0, q_max].
        const long sc = d > 0 ? std::lrintf(std::ceil(scale[g] / d - 0.01f)) : 0;
        const long m = dmin > 0 ? std::lrintf(min[g] / dmin) : 0;
        gs.sc[g] = static_cast<std::uint8_t>(std::clamp(sc, 0L, 63L));
        gs.m[g] = static_cast<std::uint8_t>(std::clamp(m, 0L, 63L));
    }
    return gs;
}

void quantize_k_groups(const float* x, const k_group_scales& gs, int q_max, std::uint8_t* q) {
    const float d = fp16_to_f32(gs.d);
    const float dmin = fp16_to_f32(gs.dmin);
    for (int g = 0; g < 8; ++g) {
        const float ds = d * gs.sc[g];
        const float dm = dmin * gs.m[g];
        const float inv = ds > 0 ? 1.0f / ds : 0.0f;
        for (int l = 0; l < 32; ++l) {
            const long v = std::lrintf((x[32 * g + l] + dm) * inv);
            q[32 * g + l] = static_cast<std::uint8_t>(std::clamp(v, 0L, static_cast<long>(q_max)));
        }
    }
}

} // namespace sluice::kernels::scalar
