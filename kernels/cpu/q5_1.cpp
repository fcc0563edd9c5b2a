// Scalar reference for Q5_1 (32 values of 5 bits, f16 scale and minimum): dequantize, dot against Q8_0.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstring>

namespace sluice::kernels::scalar {
namespace {

void unpack(const block_q5_1& b, int* q) {
    std::uint32_t qh = 0;
    std::memcpy(&qh, b.qh, sizeof(qh));
    for (std::size_t j = 0; j < 16; ++j) {
        q[j] = (b.qs[j] & 0xf) | (static_cast<int>((qh >> j) & 1u) << 4);
        q[j + 16] = (b.qs[j] >> 4) | (static_cast<int>((qh >> (j + 16)) & 1u) << 4);
    }
}

} // namespace

void dequantize_q5_1(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q5_1*>(src);
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

float dot_q5_1(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_1*>(w);
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
