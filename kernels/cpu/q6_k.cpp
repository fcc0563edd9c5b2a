// Scalar reference for Q6_K (256 values of 6 bits stored +32, int8 scale per 16, f16 super-scale).
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sluice::kernels::scalar {
namespace {

// Signed value i (0..255) of a super-block, in [-32, 31].
int q6_value(const block_q6_k& b, int i) {
    const int half = i / 128;
    const int k = (i % 128) / 32; // which quarter of the half
    const int l = i % 32;
    const std::uint8_t lbyte = b.ql[64 * half + l + 32 * (k % 2)];
    const int lo = (k < 2) ? (lbyte & 0xf) : (lbyte >> 4);
    const int hi = (b.qh[32 * half + l] >> (2 * k)) & 3;
    return (lo | (hi << 4)) - 32;
}

} // namespace

void quantize_q6_k(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q6_k*>(dst);
    for (std::size_t b = 0; b < n / qk_k; ++b, src += qk_k) {
        // Per 16 values, the value of largest magnitude maps to -32; scales share one f16 super-scale.
        float scale[16];
        float max_abs_scale = 0;
        for (int g = 0; g < 16; ++g) {
            float v = 0;
            for (int l = 0; l < 16; ++l) {
                v = std::fabs(src[16 * g + l]) > std::fabs(v) ? src[16 * g + l] : v;
            }
            scale[g] = v / -32.0f;
            max_abs_scale = std::max(max_abs_scale, std::fabs(scale[g]));
        }
        out[b].d = f32_to_fp16(max_abs_scale / 127.0f);
        const float d = fp16_to_f32(out[b].d);
        std::uint8_t q[qk_k];
        for (int g = 0; g < 16; ++g) {
            const long sc = d > 0 ? std::clamp(std::lrintf(scale[g] / d), -128L, 127L) : 0;
            out[b].scales[g] = static_cast<std::int8_t>(sc);
            const float ds = d * static_cast<float>(sc);
            const float inv = ds != 0 ? 1.0f / ds : 0.0f;
            for (int l = 0; l < 16; ++l) {
                q[16 * g + l] = static_cast<std::uint8_t>(std::clamp(std::lrintf(src[16 * g + l] * inv), -32L, 31L) + 32);
            }
        }
        std::memset(out[b].qh, 0, sizeof(out[b].qh));
        for (int i = 0; i < 256; ++i) {
            const int half = i / 128, k = (i % 128) / 32, l = i % 32;
            std::uint8_t& lbyte = out[b].ql[64 * half + l + 32 * (k % 2)];
            const int lo = q[i] & 0xf;
            lbyte = static_cast<std::uint8_t>(k < 2 ? ((lbyte & 0xf0) | lo) : ((lbyte & 0x0f) | (lo << 4)));
            out[b].qh[32 * half + l] = static_cast<std::uint8_t>(out[b].qh[32 * half + l] | ((q[i] >> 4) << (2 * k)));
        }
    }
}

void dequantize_q6_k(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q6_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int i = 0; i < 256; ++i) {
            *dst++ = d * in[b].scales[i / 16] * static_cast<float>(q6_value(in[b], i));
        }
    }
}

float dot_q6_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q6_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int sum_scaled = 0;
        for (int g = 0; g < 16; ++g) {
            int sumi = 0;
            for (int l = 0; l < 16; ++l) {
                sumi += q6_value(x[b], 16 * g + l) * y[b].qs[16 * g + l];
            }
            sum_scaled += x[b].scales[g] * sumi;
        }
        sum += y[b].d * fp16_to_f32(x[b].d) * static_cast<float>(sum_scaled);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
