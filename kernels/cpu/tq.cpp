// Scalar reference for the ternary formats TQ1_0 and TQ2_0 (values -1, 0, 1 times an f16 scale; TQ2_0 stores each
// value in 2 bits like Q2_K, TQ1_0 packs 5 values per byte in base 3). Dot products take Q8_K activations.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

namespace sluice::kernels::scalar {
namespace {

// TQ2_0 value v (0..255), -1..2.
int tq2_value(const block_tq2_0& b, int v) {
    return ((b.qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3) - 1;
}

// Trit i of a base-3 byte: the byte holds the fraction t0/3 + t1/9 + ... scaled to 256, so multiplying by 3^i
// (mod 256) brings trit i to the top, and (x * 3) >> 8 reads it.
int trit(std::uint8_t byte, int i) {
    constexpr int pow3[5] = {1, 3, 9, 27, 81};
    const auto shifted = static_cast<std::uint8_t>(byte * pow3[i]);
    return (shifted * 3) >> 8;
}

// TQ1_0 value v (0..255), -1..1: values 0..159 are 5 per byte of qs[0..31], 160..239 5 per byte of qs[32..47],
// 240..255 4 per byte of qh.
int tq1_value(const block_tq1_0& b, int v) {
    if (v < 160) {
        return trit(b.qs[v % 32], v / 32) - 1;
    }
    if (v < 240) {
        return trit(b.qs[32 + (v - 160) % 16], (v - 160) / 16) - 1;
    }
    return trit(b.qh[(v - 240) % 4], (v - 240) / 4) - 1;
}

template <class Block, class Value>
void dequantize(const void* src, float* dst, std::size_t n, Value value) {
    const auto* in = static_cast<const Block*>(src);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const float d = fp16_to_f32(in[b].d);
        for (int v = 0; v < 256; ++v) {
            *dst++ = d * static_cast<float>(value(in[b], v));
        }
    }
}

template <class Block, class Value>
float dot(std::size_t n, const void* w, const void* act, Value value) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    float sum = 0;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        int isum = 0;
        for (int v = 0; v < 256; ++v) {
            isum += value(x[b], v) * y[b].qs[v];
        }
        sum += fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(isum);
    }
    return sum;
}

} // namespace

void dequantize_tq1_0(const void* src, float* dst, std::size_t n) {
    dequantize<block_tq1_0>(src, dst, n, tq1_value);
}

float dot_tq1_0(std::size_t n, const void* w, const void* act) {
    return dot<block_tq1_0>(n, w, act, tq1_value);
}

void dequantize_tq2_0(const void* src, float* dst, std::size_t n) {
    dequantize<block_tq2_0>(src, dst, n, tq2_value);
}

float dot_tq2_0(std::size_t n, const void* w, const void* act) {
    return dot<block_tq2_0>(n, w, act, tq2_value);
}

} // namespace sluice::kernels::scalar
