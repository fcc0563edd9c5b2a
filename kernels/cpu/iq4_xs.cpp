// Scalar reference for IQ4_XS (256-value super-blocks of IQ4_NL groups with 6-bit scales), dot against Q8_K.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

namespace sluice::kernels::scalar {
namespace {

// Signed 6-bit scale of group g (0..7), in [-32, 31].
int group_scale(const block_iq4_xs& b, int g) {
    const int lo = (b.scales_l[g / 2] >> (4 * (g % 2))) & 0xf;
    const int hi = (b.scales_h >> (2 * g)) & 3;
    return (lo | (hi << 4)) - 32;
}

int level(const block_iq4_xs& b, int g, int l) {
    const std::uint8_t byte = b.qs[16 * g + (l % 16)];
    return iq4_levels[l < 16 ? (byte & 0xf) : (byte >> 4)];
}

} // namespace

void dequantize_iq4_xs(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq4_xs*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int g = 0; g < 8; ++g) {
            const float dl = d * static_cast<float>(group_scale(in[b], g));
            for (int l = 0; l < 32; ++l) {
                *dst++ = dl * static_cast<float>(level(in[b], g, l));
            }
        }
    }
}

float dot_iq4_xs(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq4_xs*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int sum_scaled = 0;
        for (int g = 0; g < 8; ++g) {
            int sumi = 0;
            for (int l = 0; l < 32; ++l) {
                sumi += level(x[b], g, l) * y[b].qs[32 * g + l];
            }
            sum_scaled += group_scale(x[b], g) * sumi;
        }
        sum += y[b].d * fp16_to_f32(x[b].d) * static_cast<float>(sum_scaled);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
