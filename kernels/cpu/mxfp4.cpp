// Scalar reference for MXFP4 (OCP microscaling: 32 FP4 E2M1 values sharing one E8M0 power-of-two scale).
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::kernels::scalar {
namespace {

void unpack(const block_mxfp4& b, int* q) {
    for (std::size_t j = 0; j < 16; ++j) {
        q[j] = mxfp4_levels[b.qs[j] & 0xf];
        q[j + 16] = mxfp4_levels[b.qs[j] >> 4];
    }
}

// The scale byte that puts the block's largest magnitude in the top binade of the FP4 range: amax lies in
// [2^k, 2^(k+1)) and the half-scale is 2^(k-3), so the largest level (12) reaches 1.5 * 2^k. Zero blocks get 0.
std::uint8_t pick_exponent(float amax) {
    if (!(amax > 0) || !std::isfinite(amax)) {
        return 0;
    }
    const int e = static_cast<int>(std::floor(std::log2(amax))) - 2 + 127;
    return static_cast<std::uint8_t>(std::clamp(e, 0, 255));
}

// Index of the level nearest x / scale; the lower index wins a tie (so 0 codes as +0).
std::uint8_t nearest_level(float x, float scale) {
    std::uint8_t best = 0;
    float best_err = std::fabs(scale * mxfp4_levels[0] - x);
    for (std::uint8_t i = 1; i < 16; ++i) {
        const float err = std::fabs(scale * mxfp4_levels[i] - x);
        if (err < best_err) {
            best_err = err;
            best = i;
        }
    }
    return best;
}

} // namespace

void quantize_mxfp4(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_mxfp4*>(dst);
    for (std::size_t b = 0; b < n / qk32; ++b, src += qk32) {
        float amax = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            amax = std::max(amax, std::fabs(src[i]));
        }
        out[b].e = pick_exponent(amax);
        const float scale = e8m0_to_f32_half(out[b].e);
        for (std::size_t j = 0; j < 16; ++j) {
            out[b].qs[j] =
                static_cast<std::uint8_t>(nearest_level(src[j], scale) | (nearest_level(src[j + 16], scale) << 4));
        }
    }
}

void dequantize_mxfp4(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_mxfp4*>(src);
    int q[32];
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const float d = e8m0_to_f32_half(in[b].e);
        unpack(in[b], q);
        for (int v : q) {
            *dst++ = d * static_cast<float>(v);
        }
    }
}

float dot_mxfp4(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_mxfp4*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    int q[32];
    float sum = 0;
    for (std::size_t b = 0; b < n / qk32; ++b) {
        unpack(x[b], q);
        int sumi = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            sumi += q[i] * y[b].qs[i];
        }
        sum += e8m0_to_f32_half(x[b].e) * fp16_to_f32(y[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
