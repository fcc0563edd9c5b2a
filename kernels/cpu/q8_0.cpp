// Scalar reference for Q8_0 (32 int8 values, one f16 scale): quantize, dequantize, dot against Q8_0.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::kernels::scalar {

void quantize_q8_0(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q8_0*>(dst);
    for (std::size_t b = 0; b < n / qk32; ++b, src += qk32) {
        float amax = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            amax = std::max(amax, std::fabs(src[i]));
        }
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = f32_to_fp16(d);
        for (std::size_t i = 0; i < qk32; ++i) {
            out[b].qs[i] = static_cast<std::int8_t>(std::lrintf(src[i] * id));
        }
    }
}

void dequantize_q8_0(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q8_0*>(src);
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (std::size_t i = 0; i < qk32; ++i) {
            *dst++ = d * in[b].qs[i];
        }
    }
}

float dot_q8_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q8_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk32; ++b) {
        int sumi = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            sumi += x[b].qs[i] * y[b].qs[i];
        }
        sum += fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
