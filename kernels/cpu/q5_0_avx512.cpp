// AVX-512 (BW + VNNI) kernel for Q5_0 weights (5-bit values stored +16) against Q8_0 activations: two blocks
// per 512-bit step, the fifth bits added under a 64-bit mask.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

// Integer sums of blocks x0 and x1 with their activation pair `yv`: 16 int32, x0 in lanes 0..7, x1 in 8..15.
// The values are stored +16: dpbusd takes them unsigned and 16 * sum(y) is taken off.
inline __m512i pair_sums(const block_q5_0& x0, const block_q5_0& x1, __m512i yv) {
    std::uint32_t h0 = 0;
    std::uint32_t h1 = 0;
    std::memcpy(&h0, x0.qh, 4);
    std::memcpy(&h1, x1.qh, 4);
    return dot_biased(add_fifth_bits(nibbles_2x16(x0.qs, x1.qs), h0, h1), yv, _mm512_set1_epi8(16));
}

// Word offsets of the f16 scales of four blocks for scale_products4: weights (22-byte blocks; the fourth scale,
// at byte 66, read from a second window at byte 24), then activations.
alignas(64) constexpr std::int16_t scale_words[32] = {0, 11, 22, 32 + 21, 0, 17, 34, 51};

} // namespace

float dot_q5_0(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q5_0*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const auto* xb = reinterpret_cast<const std::uint8_t*>(x + b);
        const __m512 d = _mm512_castps128_ps512(scale_products4(xb, xb + 24, y + b, scale_words));
        for (int h = 0; h < 2; ++h) {
            const std::size_t p = b + 2 * h;
            const __m512i sums = pair_sums(x[p], x[p + 1], load_2x32(y[p].qs, y[p + 1].qs));
            acc[h] = _mm512_fmadd_ps(spread2(d, 2 * h, 2 * h + 1), _mm512_cvtepi32_ps(sums), acc[h]);
        }
    }
    // The last blocks two at a time; a lone last block is paired with itself at scale 0.
    for (; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512 d = join_ps(half(x[b].d) * half(y[b].d), c != b ? half(x[c].d) * half(y[c].d) : 0.0f);
        acc[0] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(pair_sums(x[b], x[c], load_2x32(y[b].qs, y[c].qs))), acc[0]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

} // namespace sluice::kernels::avx512
