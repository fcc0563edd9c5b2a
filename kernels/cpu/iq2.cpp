// Scalar reference for the IQ2 formats (IQ2_XXS, IQ2_XS, IQ2_S): groups of 8 values are one row of a lattice grid
// of magnitudes 8, 25, 43 with 8 sign bits, scaled by d * (0.5 + s) / 4 for a 4-bit s per 16 or 32 values.
// Dot products take Q8_K activations; each super-block's integer sum is exact, then one float step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstring>

namespace sluice::kernels::scalar {
namespace {

// The group of 8 values of grid row `row` with `signs` (bit j set: value j negative).
struct group8 {
    std::uint64_t row;
    std::uint8_t signs;
};

// Writes db * grid * sign for one group, the product rounded once as GGML does.
void store_group(group8 g, float db, float* dst) {
    for (int j = 0; j < 8; ++j) {
        const float v = db * static_cast<float>((g.row >> (8 * j)) & 0xff);
        dst[j] = (g.signs >> j) & 1 ? -v : v;
    }
}

// Sum of grid * sign * y over one group.
int dot_group(group8 g, const std::int8_t* y) {
    int s = 0;
    for (int j = 0; j < 8; ++j) {
        const int v = static_cast<int>((g.row >> (8 * j)) & 0xff) * y[j];
        s += (g.signs >> j) & 1 ? -v : v;
    }
    return s;
}

// IQ2_XXS: group l of 32-value run `ib`, and the run's 4-bit scale.
group8 xxs_group(const block_iq2_xxs& b, int ib, int l) {
    std::uint32_t aux[2];
    std::memcpy(aux, b.qs + 4 * ib, 8);
    const auto idx = static_cast<std::uint8_t>(aux[0] >> (8 * l));
    return {iq2xxs_grid[idx], iq_signs[(aux[1] >> (7 * l)) & 127]};
}
int xxs_scale(const block_iq2_xxs& b, int ib) {
    std::uint32_t aux;
    std::memcpy(&aux, b.qs + 4 * ib + 2, 4);
    return static_cast<int>(aux >> 28);
}

// IQ2_XS: group k (0..31) and the 4-bit scale of its 16 values.
group8 xs_group(const block_iq2_xs& b, int k) {
    return {iq2xs_grid[b.qs[k] & 511], iq_signs[b.qs[k] >> 9]};
}
int xs_scale(const block_iq2_xs& b, int k) {
    return (b.scales[k / 4] >> (4 * ((k % 4) / 2))) & 0xf;
}

// IQ2_S: group k (0..31): 10-bit index, an explicit sign byte, and the 4-bit scale of its 16 values.
group8 s_group(const block_iq2_s& b, int k) {
    const int idx = b.qs[k] | (((b.qh[k / 4] >> (2 * (k % 4))) & 3) << 8);
    return {iq2s_grid[idx], b.qs[32 + k]};
}
int s_scale(const block_iq2_s& b, int k) {
    return (b.scales[k / 4] >> (4 * ((k % 4) / 2))) & 0xf;
}

// Block scale d * (0.5 + s) * 0.25 in GGML's order of operations.
float group_scale(float d, int s) {
    return d * (0.5f + static_cast<float>(s)) * 0.25f;
}

} // namespace

void dequantize_iq2_xxs(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq2_xxs*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db = group_scale(d, xxs_scale(in[b], ib));
            for (int l = 0; l < 4; ++l, dst += 8) {
                store_group(xxs_group(in[b], ib, l), db, dst);
            }
        }
    }
}

float dot_iq2_xxs(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq2_xxs*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int s = 0;
            for (int l = 0; l < 4; ++l) {
                s += dot_group(xxs_group(x[b], ib, l), y[b].qs + 32 * ib + 8 * l);
            }
            isum += (2 * xxs_scale(x[b], ib) + 1) * s;
        }
        sum += 0.125f * fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

void dequantize_iq2_xs(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq2_xs*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int k = 0; k < 32; ++k, dst += 8) {
            store_group(xs_group(in[b], k), group_scale(d, xs_scale(in[b], k)), dst);
        }
    }
}

float dot_iq2_xs(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq2_xs*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int k = 0; k < 32; ++k) {
            isum += (2 * xs_scale(x[b], k) + 1) * dot_group(xs_group(x[b], k), y[b].qs + 8 * k);
        }
        sum += 0.125f * fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

void dequantize_iq2_s(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq2_s*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int k = 0; k < 32; ++k, dst += 8) {
            store_group(s_group(in[b], k), group_scale(d, s_scale(in[b], k)), dst);
        }
    }
}

float dot_iq2_s(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq2_s*>(w);
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

} // namespace sluice::kernels::scalar
