// Scalar reference for Q5_K (Q4_K plus a fifth bit per value in qh): quantize, dequantize, dot against Q8_K.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/k_quant_util.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstring>

namespace sluice::kernels::scalar {
namespace {

// Value l (0..31) of group g (0..7): nibble from qs, fifth bit is bit g of qh[l].
int q5_value(const block_q5_k& b, int g, int l) {
    const std::uint8_t byte = b.qs[32 * (g / 2) + l];
    const int lo = (g % 2 == 0) ? (byte & 0xf) : (byte >> 4);
    return lo | (((b.qh[l] >> g) & 1) << 4);
}

} // namespace

void quantize_q5_k(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q5_k*>(dst);
    for (std::size_t b = 0; b < n / qk_k; ++b, src += qk_k) {
        k_group_scales gs = fit_k_group_scales(src, 31);
        out[b].d = gs.d;
        out[b].dmin = gs.dmin;
        pack_scale_min_k4(gs.sc, gs.m, out[b].scales);
        std::uint8_t q[qk_k];
        quantize_k_groups(src, gs, 31, q);
        std::memset(out[b].qh, 0, sizeof(out[b].qh));
        for (int g = 0; g < 8; ++g) {
            for (int l = 0; l < 32; ++l) {
                out[b].qh[l] = static_cast<std::uint8_t>(out[b].qh[l] | ((q[32 * g + l] >> 4) << g));
            }
        }
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                out[b].qs[32 * c + l] =
                    static_cast<std::uint8_t>((q[64 * c + l] & 0xf) | ((q[64 * c + 32 + l] & 0xf) << 4));
            }
        }
    }
}

void dequantize_q5_k(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q5_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        const float dmin = fp16_to_f32(in[b].dmin);
        for (int g = 0; g < 8; ++g) {
            std::uint8_t sc = 0, m = 0;
            unpack_scale_min_k4(in[b].scales, g, sc, m);
            for (int l = 0; l < 32; ++l) {
                *dst++ = d * sc * static_cast<float>(q5_value(in[b], g, l)) - dmin * m;
            }
        }
    }
}

float dot_q5_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int sum_scaled = 0;
        int sum_mins = 0;
        for (int g = 0; g < 8; ++g) {
            std::uint8_t sc = 0, m = 0;
            unpack_scale_min_k4(x[b].scales, g, sc, m);
            int sumi = 0;
            for (int l = 0; l < 32; ++l) {
                sumi += q5_value(x[b], g, l) * y[b].qs[32 * g + l];
            }
            sum_scaled += sc * sumi;
            sum_mins += m * (y[b].bsums[2 * g] + y[b].bsums[2 * g + 1]);
        }
        sum += y[b].d * (fp16_to_f32(x[b].d) * static_cast<float>(sum_scaled) -
                         fp16_to_f32(x[b].dmin) * static_cast<float>(sum_mins));
    }
    return sum;
}

} // namespace sluice::kernels::scalar
