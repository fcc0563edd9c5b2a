// Scalar reference for the IQ1 formats (IQ1_S, IQ1_M): groups of 8 values are one row of a ternary grid (-1, 0, 1)
// shifted by a delta of +-1/8, times d * (2s + 1) for a 3-bit s per 32 (IQ1_S) or 16 (IQ1_M) values. Dot products
// take Q8_K activations: with the delta scaled by 8, each super-block's sum is an exact integer, then one float step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstring>

namespace sluice::kernels::scalar {
namespace {

constexpr float iq1_delta = 0.125f;

// One group of 8: its grid row and whether its delta is negative.
struct group8 {
    std::uint64_t row;
    bool minus;
};

int row_value(std::uint64_t row, int j) {
    return static_cast<std::int8_t>((row >> (8 * j)) & 0xff);
}

// dl * (grid + delta) for one group, as GGML computes it.
void store_group(group8 g, float dl, float* dst) {
    const float delta = g.minus ? -iq1_delta : iq1_delta;
    for (int j = 0; j < 8; ++j) {
        dst[j] = dl * (static_cast<float>(row_value(g.row, j)) + delta);
    }
}

// 8 * sum((grid + delta) * y) over one group, an integer.
int dot_group(group8 g, const std::int8_t* y) {
    int s = 0, ys = 0;
    for (int j = 0; j < 8; ++j) {
        s += row_value(g.row, j) * y[j];
        ys += y[j];
    }
    return 8 * s + (g.minus ? -ys : ys);
}

// IQ1_S group k (0..31) and the 3-bit scale of its 32 values.
group8 s_group(const block_iq1_s& b, int k) {
    const int h = b.qh[k / 4];
    return {iq1s_grid[b.qs[k] | (((h >> (3 * (k % 4))) & 7) << 8)], (h & 0x8000) != 0};
}
int s_scale(const block_iq1_s& b, int k) {
    return (b.qh[k / 4] >> 12) & 7;
}

// IQ1_M group k (0..31) and the 3-bit scale of its 16 values.
group8 m_group(const block_iq1_m& b, int k) {
    const int nib = (b.qh[k / 2] >> (4 * (k % 2))) & 0xf;
    return {iq1s_grid[b.qs[k] | ((nib & 7) << 8)], (nib & 8) != 0};
}
int m_scale(const block_iq1_m& b, int k) {
    std::uint16_t w[4];
    std::memcpy(w, b.scales, 8);
    const int half = k / 2; // 16-value half 0..15
    return (w[half / 4] >> (3 * (half % 4))) & 7;
}
float m_super_scale(const block_iq1_m& b) {
    std::uint16_t w[4];
    std::memcpy(w, b.scales, 8);
    const auto bits =
        static_cast<std::uint16_t>((w[0] >> 12) | ((w[1] >> 8) & 0x00f0) | ((w[2] >> 4) & 0x0f00) | (w[3] & 0xf000));
    return fp16_to_f32(bits);
}

} // namespace

void dequantize_iq1_s(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq1_s*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int k = 0; k < 32; ++k, dst += 8) {
            store_group(s_group(in[b], k), d * static_cast<float>(2 * s_scale(in[b], k) + 1), dst);
        }
    }
}

float dot_iq1_s(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq1_s*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int k = 0; k < 32; ++k) {
            isum += (2 * s_scale(x[b], k) + 1) * dot_group(s_group(x[b], k), y[b].qs + 8 * k);
        }
        sum += 0.125f * fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

void dequantize_iq1_m(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq1_m*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = m_super_scale(in[b]);
        for (int k = 0; k < 32; ++k, dst += 8) {
            store_group(m_group(in[b], k), d * static_cast<float>(2 * m_scale(in[b], k) + 1), dst);
        }
    }
}

float dot_iq1_m(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq1_m*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int k = 0; k < 32; ++k) {
            isum += (2 * m_scale(x[b], k) + 1) * dot_group(m_group(x[b], k), y[b].qs + 8 * k);
        }
        sum += 0.125f * m_super_scale(x[b]) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
