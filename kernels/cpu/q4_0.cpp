// Scalar reference for Q4_0 (32 values of 4 bits stored +8, one f16 scale): quantize, dequantize, dot.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::kernels::scalar {
namespace {

void unpack(const block_q4_0& b, int* q) {
    for (std::size_t j = 0; j < 16; ++j) {
        q[j] = (b.qs[j] & 0xf) - 8;
        q[j + 16] = (b.qs[j] >> 4) - 8;
    }
}

} // namespace

void quantize_q4_0(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q4_0*>(dst);
    for (std::size_t b = 0; b < n / qk32; ++b, src += qk32) {
        // The value of largest magnitude maps to -8 so that the full range [-8, 7] is used.
        float max = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            if (std::fabs(src[i]) > std::fabs(max)) {
                max = src[i];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = f32_to_fp16(d);
        for (std::size_t j = 0; j < 16; ++j) {
            const int lo = std::clamp(static_cast<int>(std::lrintf(src[j] * id)) + 8, 0, 15);
            const int hi = std::clamp(static_cast<int>(std::lrintf(src[j + 16] * id)) + 8, 0, 15);
            out[b].qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
    }
}

void dequantize_q4_0(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q4_0*>(src);
    int q[32];
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const float d = fp16_to_f32(in[b].d);
        unpack(in[b], q);
        for (int v : q) {
            *dst++ = d * static_cast<float>(v);
        }
    }
}

float dot_q4_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    int q[32];
    float sum = 0;
    for (std::size_t b = 0; b < n / qk32; ++b) {
        unpack(x[b], q);
        int sumi = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            sumi += q[i] * y[b].qs[i];
        }
        sum += fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
