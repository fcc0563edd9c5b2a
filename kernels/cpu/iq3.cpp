// Scalar reference for the IQ3 formats (IQ3_XXS, IQ3_S): groups of 4 values are one row of a lattice grid (IQ3_XXS:
// 256 rows of 4, 12, ..., 62; IQ3_S: 512 rows of odd values 1..15), with one sign bit per value and a 4-bit scale
// per 32 values. Dot products take Q8_K activations; each super-block's integer sum is exact, then one float step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstring>

namespace sluice::kernels::scalar {
namespace {

// Value j (0..3) of grid row `row`.
int row_value(std::uint32_t row, int j) {
    return static_cast<int>((row >> (8 * j)) & 0xff);
}

// IQ3_XXS: the scale-and-signs word of 32-value run `ib`.
std::uint32_t xxs_aux(const block_iq3_xxs& b, int ib) {
    std::uint32_t aux;
    std::memcpy(&aux, b.qs + 64 + 4 * ib, 4);
    return aux;
}

// IQ3_XXS value v (0..255) as grid magnitude and sign (true: negative).
int xxs_value(const block_iq3_xxs& b, int v) {
    const std::uint32_t aux = xxs_aux(b, v / 32);
    const std::uint8_t signs = iq_signs[(aux >> (7 * ((v % 32) / 8))) & 127];
    const int mag = row_value(iq3xxs_grid[b.qs[v / 4]], v % 4);
    return (signs >> (v % 8)) & 1 ? -mag : mag;
}

// IQ3_S value v (0..255), signed.
int s_value(const block_iq3_s& b, int v) {
    const int k = v / 4;
    const int idx = b.qs[k] | (((b.qh[k / 8] >> (k % 8)) & 1) << 8);
    const int mag = row_value(iq3s_grid[idx], v % 4);
    return (b.signs[v / 8] >> (v % 8)) & 1 ? -mag : mag;
}
int s_scale(const block_iq3_s& b, int ib) {
    return (b.scales[ib / 2] >> (4 * (ib % 2))) & 0xf;
}

// Writes db * |value| with the sign applied after the product, as GGML does.
float signed_product(float db, int value) {
    const float v = db * static_cast<float>(value < 0 ? -value : value);
    return value < 0 ? -v : v;
}

} // namespace

void dequantize_iq3_xxs(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq3_xxs*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db = d * (0.5f + static_cast<float>(xxs_aux(in[b], ib) >> 28)) * 0.5f;
            for (int l = 0; l < 32; ++l) {
                *dst++ = signed_product(db, xxs_value(in[b], 32 * ib + l));
            }
        }
    }
}

float dot_iq3_xxs(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq3_xxs*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int s = 0;
            for (int l = 0; l < 32; ++l) {
                s += xxs_value(x[b], 32 * ib + l) * y[b].qs[32 * ib + l];
            }
            isum += (2 * static_cast<int>(xxs_aux(x[b], ib) >> 28) + 1) * s;
        }
        sum += 0.25f * fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

void dequantize_iq3_s(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq3_s*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db = d * static_cast<float>(1 + 2 * s_scale(in[b], ib));
            for (int l = 0; l < 32; ++l) {
                *dst++ = signed_product(db, s_value(in[b], 32 * ib + l));
            }
        }
    }
}

float dot_iq3_s(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq3_s*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int s = 0;
            for (int l = 0; l < 32; ++l) {
                s += s_value(x[b], 32 * ib + l) * y[b].qs[32 * ib + l];
            }
            isum += (1 + 2 * s_scale(x[b], ib)) * s;
        }
        sum += fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
