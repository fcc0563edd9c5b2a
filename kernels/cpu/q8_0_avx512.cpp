// AVX-512 (BW + VNNI) kernel for Q8_0 weights against Q8_0 activations, two blocks per 512-bit step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {

// Weights are biased to unsigned (w ^ 0x80 = w + 128) for dpbusd, and the bias is removed by starting each
// sum at -128 * sum(y). The float steps match dot4_q8_0, so both give bit-identical results.
float dot_q8_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q8_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        for (int h = 0; h < 2; ++h) {
            const std::size_t p = b + 2 * h;
            const __m512i yv = load_2x32(y[p].qs, y[p + 1].qs);
            const __m512i unbias =
                _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, yv));
            const __m512i wu = _mm512_xor_si512(load_2x32(x[p].qs, x[p + 1].qs), bias);
            const __m512i prod = _mm512_dpbusd_epi32(unbias, wu, yv);
            const __m512 d = join_ps(half(x[p].d) * half(y[p].d), half(x[p + 1].d) * half(y[p + 1].d));
            acc[h] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(prod), acc[h]);
        }
    }
    float out = _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
    for (; b < nb; ++b) {
        int sumi = 0;
        for (std::size_t i = 0; i < qk32; ++i) {
            sumi += x[b].qs[i] * y[b].qs[i];
        }
        out += half(x[b].d) * half(y[b].d) * static_cast<float>(sumi);
    }
    return out;
}

void dot4_q8_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q8_0*>(w);
    const block_q8_0* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const std::size_t nb = n / qk32;
    // Same block steps and accumulators as dot_q8_0, so each result is bit-identical to it.
    __m512 acc[4][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm512_setzero_ps();
    }
    std::size_t b = 0;
    // idx[t]: lanes 0..7 take scale product 2t (block p), lanes 8..15 take 2t+1 (block p+1).
    __m512i idx[4];
    for (int t = 0; t < 4; ++t) {
        idx[t] = join(_mm256_set1_epi32(2 * t), _mm256_set1_epi32(2 * t + 1));
    }
    for (; b + 4 <= nb; b += 4) {
        for (int h = 0; h < 2; ++h) {
            // Weight side once per block pair: |w|, its sign mask and the scales.
            const std::size_t p = b + 2 * h;
            const __m512i wv = load_2x32(x[p].qs, x[p + 1].qs);
            const __mmask64 neg = _mm512_movepi8_mask(wv);
            const __m512i wabs = _mm512_abs_epi8(wv);
            // All eight activation scales (4 tokens x 2 blocks) converted and multiplied at once.
            const __m128i yh = _mm_setr_epi16(
                static_cast<short>(y[0][p].d), static_cast<short>(y[0][p + 1].d), static_cast<short>(y[1][p].d),
                static_cast<short>(y[1][p + 1].d), static_cast<short>(y[2][p].d), static_cast<short>(y[2][p + 1].d),
                static_cast<short>(y[3][p].d), static_cast<short>(y[3][p + 1].d));
            const __m128i xh = _mm_set1_epi32(static_cast<int>(x[p].d | (static_cast<std::uint32_t>(x[p + 1].d) << 16)));
            const __m512 dxy = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_cvtph_ps(xh), _mm256_cvtph_ps(yh)));
            for (int t = 0; t < 4; ++t) {
                const __m512i yv = load_2x32(y[t][p].qs, y[t][p + 1].qs);
                const __m512i ys = _mm512_mask_sub_epi8(yv, neg, _mm512_setzero_si512(), yv);
                const __m512i prod = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wabs, ys);
                const __m512 d = _mm512_permutexvar_ps(idx[t], dxy);
                acc[t][h] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(prod), acc[t][h]);
            }
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
        for (std::size_t r = b; r < nb; ++r) {
            int sumi = 0;
            for (std::size_t i = 0; i < qk32; ++i) {
                sumi += x[r].qs[i] * y[t][r].qs[i];
            }
            out[t] += half(x[r].d) * half(y[t][r].d) * static_cast<float>(sumi);
        }
    }
}

} // namespace sluice::kernels::avx512
