// Scalar reference for IQ4_NL (32 indices into a fixed non-linear 16-level table, f16 scale).
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

namespace sluice::kernels::scalar {
namespace {

void unpack(const block_iq4_nl& b, int* q) {
    for (std::size_t j = 0; j < 16; ++j) {
        q[j] = iq4_levels[b.qs[j] & 0xf];
        q[j + 16] = iq4_levels[b.qs[j] >> 4];
    }
}

} // namespace

void dequantize_iq4_nl(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_iq4_nl*>(src);
    int q[32];
    for (std::size_t b = 0; b < n / qk32; ++b) {
        const float d = fp16_to_f32(in[b].d);
        unpack(in[b], q);
        for (int v : q) {
            *dst++ = d * static_cast<float>(v);
        }
    }
}

float dot_iq4_nl(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq4_nl*>(w);
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
