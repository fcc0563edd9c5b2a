// Scalar reference for Q8_K, the 8-bit activation super-block the K-formats are multiplied with.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::kernels::scalar {

void quantize_q8_k(const float* src, void* dst, std::size_t n) {
    auto* out = static_cast<block_q8_k*>(dst);
    for (std::size_t b = 0; b < n / qk_k; ++b, src += qk_k) {
        float amax = 0;
        for (std::size_t i = 0; i < qk_k; ++i) {
            amax = std::max(amax, std::fabs(src[i]));
        }
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = d;
        for (std::size_t i = 0; i < qk_k; ++i) {
            out[b].qs[i] = static_cast<std::int8_t>(std::lrintf(src[i] * id));
        }
        for (std::size_t g = 0; g < 16; ++g) {
            int s = 0;
            for (std::size_t i = 0; i < 16; ++i) {
                s += out[b].qs[g * 16 + i];
            }
            out[b].bsums[g] = static_cast<std::int16_t>(s);
        }
    }
}

void dequantize_q8_k(const void* src, float* dst, std::size_t n) {
    const auto* in = static_cast<const block_q8_k*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        for (std::size_t i = 0; i < qk_k; ++i) {
            *dst++ = in[b].d * in[b].qs[i];
        }
    }
}

} // namespace sluice::kernels::scalar
