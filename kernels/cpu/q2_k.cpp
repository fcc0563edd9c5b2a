// Scalar reference for Q2_K (256-value super-blocks, 16 groups of 16 with 4-bit scale and min, 2-bit values):
// quantize, dequantize, dot.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <iterator>
#include <cmath>

namespace sluice::kernels::scalar {
namespace {

// Value v (0..255) of a super-block, 0..3.
int q2_value(const block_q2_k& b, int v) {
    return (b.qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
}

// Rounds x / step to a code in [0, q_max] (0 for a zero step).
std::uint8_t round_code(float x, float step, int q_max) {
    const long q = step > 0 ? std::lrintf(x / step) : 0;
    return static_cast<std::uint8_t>(std::clamp(q, 0L, static_cast<long>(q_max)));
}

// Fits x ~ d*sc[g]*q - dmin*m[g] with q in [0, 3] and 4-bit sc, m for the 16 groups of one super-block.
void quantize_block(const float* x, block_q2_k& out) {
    float scale[16], min[16], max_scale = 0, max_min = 0;
    for (int g = 0; g < 16; ++g) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 16; ++l) {
            lo = std::min(lo, x[16 * g + l]);
            hi = std::max(hi, x[16 * g + l]);
        }
        scale[g] = (hi - lo) / 3.0f;
        min[g] = -lo;
        max_scale = std::max(max_scale, scale[g]);
        max_min = std::max(max_min, min[g]);
    }
    out.d = f32_to_fp16(max_scale / 15.0f);
    out.dmin = f32_to_fp16(max_min / 15.0f);
    const float d = fp16_to_f32(out.d), dmin = fp16_to_f32(out.dmin);
    std::fill(std::begin(out.qs), std::end(out.qs), 0);
    for (int g = 0; g < 16; ++g) {
        // The scale rounds up so the group's range still fits in four steps.
        const long up = d > 0 ? std::lrintf(std::ceil(scale[g] / d - 0.01f)) : 0;
        const auto sc = static_cast<std::uint8_t>(std::clamp(up, 0L, 15L));
        const std::uint8_t m = round_code(min[g], dmin, 15);
        out.scales[g] = static_cast<std::uint8_t>(sc | (m << 4));
        for (int l = 0; l < 16; ++l) {
            const int v = 16 * g + l;
            const std::uint8_t q = round_code(x[v] + dmin * m, d * sc, 3);
            out.qs[32 * (v / 128) + v % 32] |= static_cast<std::uint8_t>(q << (2 * ((v % 128) / 32)));
        }
    }
}

} // namespace

void quantize_q2_k(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q2_k*>(dst);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        quantize_block(src + b * qk_k, out[b]);
    }
}

void dequantize_q2_k(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q2_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        const float dmin = fp16_to_f32(in[b].dmin);
        for (int g = 0; g < 16; ++g) {
            const float dl = d * static_cast<float>(in[b].scales[g] & 0xf);
            const float ml = dmin * static_cast<float>(in[b].scales[g] >> 4);
            for (int l = 0; l < 16; ++l) {
                *dst++ = dl * static_cast<float>(q2_value(in[b], 16 * g + l)) - ml;
            }
        }
    }
}

float dot_q2_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q2_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int sum_scaled = 0;
        int sum_mins = 0;
        for (int g = 0; g < 16; ++g) {
            int sumi = 0;
            for (int l = 0; l < 16; ++l) {
                sumi += q2_value(x[b], 16 * g + l) * y[b].qs[16 * g + l];
            }
            sum_scaled += (x[b].scales[g] & 0xf) * sumi;
            sum_mins += (x[b].scales[g] >> 4) * y[b].bsums[g];
        }
        sum += y[b].d * (fp16_to_f32(x[b].d) * static_cast<float>(sum_scaled) -
                         fp16_to_f32(x[b].dmin) * static_cast<float>(sum_mins));
    }
    return sum;
}

} // namespace sluice::kernels::scalar
