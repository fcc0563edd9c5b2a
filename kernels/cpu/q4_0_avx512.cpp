// AVX-512 (BW + VNNI) kernels for Q4_0 weights against Q8_0 activations: two blocks per 512-bit step, and the
// 4-token prefill form.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Integer sums of blocks x0 and x1 with their activation pair `yv`: 16 int32, x0 in lanes 0..7, x1 in 8..15.
// The nibbles are stored +8: dpbusd takes them unsigned and 8 * sum(y) is taken off.
inline __m512i pair_sums(const block_q4_0& x0, const block_q4_0& x1, __m512i yv) {
    return dot_biased(nibbles_2x16(x0.qs, x1.qs), yv, _mm512_set1_epi8(8));
}

// The last blocks from `b` into `acc`, two at a time; a lone last block is paired with itself at scale 0.
// dot_q4_0 and dot4_q4_0 share it so that their results are bit-identical.
inline __m512 tail(const block_q4_0* x, const block_q8_0* y, std::size_t b, std::size_t nb, __m512 acc) {
    for (; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512 d = join_ps(half(x[b].d) * half(y[b].d), c != b ? half(x[c].d) * half(y[c].d) : 0.0f);
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(pair_sums(x[b], x[c], load_2x32(y[b].qs, y[c].qs))), acc);
    }
    return acc;
}

// Word offsets of the f16 scales of four blocks for scale_products4: weights (18-byte blocks, all in the first
// 64 bytes), then activations.
alignas(64) constexpr std::int16_t scale_words[32] = {0, 9, 18, 27, 0, 17, 34, 51};

} // namespace

float dot_q4_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const __m512 d = _mm512_castps128_ps512(scale_products4(x + b, x + b, y + b, scale_words));
        for (int h = 0; h < 2; ++h) {
            const std::size_t p = b + 2 * h;
            const __m512i sums = pair_sums(x[p], x[p + 1], load_2x32(y[p].qs, y[p + 1].qs));
            acc[h] = _mm512_fmadd_ps(spread2(d, 2 * h, 2 * h + 1), _mm512_cvtepi32_ps(sums), acc[h]);
        }
    }
    acc[0] = tail(x, y, b, nb, acc[0]);
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

void dot4_q4_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q4_0*>(w);
    const block_q8_0* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const std::size_t nb = n / qk32;
    const __m512i eight = _mm512_set1_epi8(8);
    // Same block steps, products and accumulators as dot_q4_0, so each result is bit-identical to it.
    __m512 acc[4][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm512_setzero_ps();
    }
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        // Weight side once per four blocks: the nibbles of both pairs and the scales.
        const __m512i q[2] = {nibbles_2x16(x[b].qs, x[b + 1].qs), nibbles_2x16(x[b + 2].qs, x[b + 3].qs)};
        const __m128i xh = _mm_setr_epi16(static_cast<short>(x[b].d), static_cast<short>(x[b + 1].d),
                                          static_cast<short>(x[b + 2].d), static_cast<short>(x[b + 3].d), 0, 0, 0, 0);
        const __m512 dx = _mm512_broadcast_f32x4(_mm_cvtph_ps(xh));
        // All sixteen activation scales (4 tokens x 4 blocks) converted and multiplied at once: lane 4t + i
        // holds token t's block b + i.
        long long yd[4];
        for (int t = 0; t < 4; ++t) {
            yd[t] = static_cast<long long>(y[t][b].d | static_cast<std::uint64_t>(y[t][b + 1].d) << 16 |
                                           static_cast<std::uint64_t>(y[t][b + 2].d) << 32 |
                                           static_cast<std::uint64_t>(y[t][b + 3].d) << 48);
        }
        const __m256i yh = _mm256_setr_epi64x(yd[0], yd[1], yd[2], yd[3]);
        const __m512 dxy = _mm512_mul_ps(dx, _mm512_cvtph_ps(yh));
        for (int t = 0; t < 4; ++t) {
            for (int h = 0; h < 2; ++h) {
                const std::size_t p = b + 2 * h;
                const __m512i sums = dot_biased(q[h], load_2x32(y[t][p].qs, y[t][p + 1].qs), eight);
                acc[t][h] = _mm512_fmadd_ps(spread2(dxy, 4 * t + 2 * h, 4 * t + 2 * h + 1), _mm512_cvtepi32_ps(sums),
                                            acc[t][h]);
            }
        }
    }
    for (int t = 0; t < 4; ++t) {
        const __m512 a0 = tail(x, y[t], b, nb, acc[t][0]);
        out[t] = _mm512_reduce_add_ps(_mm512_add_ps(a0, acc[t][1]));
    }
}

} // namespace sluice::kernels::avx512
