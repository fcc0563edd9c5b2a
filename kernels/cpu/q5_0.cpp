// Scalar reference for Q5_0 (32 values of 5 bits stored +16, one f16 scale): dequantize, dot against Q8_0.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstring>

namespace sluice::kernels::scalar {
namespace {

void unpack(const block_q5_0& b, int* q) {
    std::uint32_t qh = 0;
    std::memcpy(&qh, b.qh, sizeof(qh));
    for (std::size_t j = 0; j < 16; ++j) {
        const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
        const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
        q[j] = ((b.qs[j] & 0xf) | h0) - 16;
        q[j + 16] = ((b.qs[j] >> 4) | h1) - 16;
    }
}

} // namespace

void dequantize_q5_0(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q5_0*>(src);
    int q[32];
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const float d = fp16_to_f32(in[b].d);
        unpack(in[b], q);
        for (int v : q) {
            *dst++ = d * static_cast<float>(v);
        }
    }
}

float dot_q5_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_0*>(w);
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
