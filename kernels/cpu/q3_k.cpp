// Scalar reference for Q3_K (256-value super-blocks, 16 groups of 16 with signed 6-bit scales, values -4..3):
// quantize, dequantize, dot.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <iterator>
#include <cmath>

namespace sluice::kernels::scalar {
namespace {

// Value v (0..255) of a super-block, -4..3: two low bits from qs, minus 4 where the hmask bit is clear.
int q3_value(const block_q3_k& b, int v) {
    const int low = (b.qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
    const int high = (b.hmask[v % 32] >> (v / 32)) & 1;
    return low - (high ? 0 : 4);
}

// Symmetric fit x ~ d*sc[g]*q with q in [-4, 3] and sc in [-32, 31]: each group's largest magnitude maps to
// q = -4 (the sign of its scale follows), and the group scale with the largest magnitude to sc = -32.
void quantize_block(const float* x, block_q3_k& out) {
    float scale[16], best = 0;
    for (int g = 0; g < 16; ++g) {
        float ext = 0;
        for (int l = 0; l < 16; ++l) {
            ext = std::fabs(x[16 * g + l]) > std::fabs(ext) ? x[16 * g + l] : ext;
        }
        scale[g] = ext / -4.0f;
        best = std::fabs(scale[g]) > std::fabs(best) ? scale[g] : best;
    }
    out.d = f32_to_fp16(best / -32.0f);
    const float d = fp16_to_f32(out.d);
    std::int8_t sc[16];
    std::fill(std::begin(out.qs), std::end(out.qs), 0);
    std::fill(std::begin(out.hmask), std::end(out.hmask), 0);
    for (int g = 0; g < 16; ++g) {
        sc[g] = static_cast<std::int8_t>(d != 0 ? std::clamp(std::lrintf(scale[g] / d), -32L, 31L) : 0);
        const float step = d * sc[g];
        for (int l = 0; l < 16; ++l) {
            const int v = 16 * g + l;
            const long q = step != 0 ? std::clamp(std::lrintf(x[v] / step), -4L, 3L) : 0;
            const int u = static_cast<int>(q) + 4; // 0..7: bit 2 is the hmask bit, the rest the low bits
            out.qs[32 * (v / 128) + v % 32] |= static_cast<std::uint8_t>((u & 3) << (2 * ((v % 128) / 32)));
            out.hmask[v % 32] |= static_cast<std::uint8_t>((u >> 2) << (v / 32));
        }
    }
    pack_q3_k_scales(sc, out.scales);
}

} // namespace

void quantize_q3_k(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q3_k*>(dst);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        quantize_block(src + b * qk_k, out[b]);
    }
}

void dequantize_q3_k(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q3_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        std::int8_t sc[16];
        unpack_q3_k_scales(in[b].scales, sc);
        for (int g = 0; g < 16; ++g) {
            const float dl = d * static_cast<float>(sc[g]);
            for (int l = 0; l < 16; ++l) {
                *dst++ = dl * static_cast<float>(q3_value(in[b], 16 * g + l));
            }
        }
    }
}

float dot_q3_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q3_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        std::int8_t sc[16];
        unpack_q3_k_scales(x[b].scales, sc);
        int sum_scaled = 0;
        for (int g = 0; g < 16; ++g) {
            int sumi = 0;
            for (int l = 0; l < 16; ++l) {
                sumi += q3_value(x[b], 16 * g + l) * y[b].qs[16 * g + l];
            }
            sum_scaled += sc[g] * sumi;
        }
        sum += y[b].d * fp16_to_f32(x[b].d) * static_cast<float>(sum_scaled);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
