// Scalar reference for Q4_1 (32 values of 4 bits, f16 scale and minimum): dequantize, dot against Q8_0.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

namespace sluice::kernels::scalar {
namespace {

void unpack(const block_q4_1& b, int* q) {
    for (std::size_t j = 0; j < 16; ++j) {
        q[j] = b.qs[j] & 0xf;
        q[j + 16] = b.qs[j] >> 4;
    }
}

} // namespace

void dequantize_q4_1(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q4_1*>(src);
    int q[32];
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const float d = fp16_to_f32(in[b].d);
        const float m = fp16_to_f32(in[b].m);
        unpack(in[b], q);
        for (int v : q) {
            *dst++ = d * static_cast<float>(v) + m;
        }
    }
}

float dot_q4_1(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_1*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    int q[32];
    float sum = 0;
    for (std::size_t b = 0; b < n / qk32; ++b) {
        unpack(x[b], q);
        int sumi = 0;
        int sumy = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            sumi += q[i] * y[b].qs[i];
            sumy += y[b].qs[i];
        }
        const float dy = fp16_to_f32(y[b].d);
        sum += fp16_to_f32(x[b].d) * dy * static_cast<float>(sumi) + fp16_to_f32(x[b].m) * dy * static_cast<float>(sumy);
    }
    return sum;
}

} // namespace sluice::kernels::scalar
