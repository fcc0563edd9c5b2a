// AVX-512 (BW + VNNI) kernel for IQ4_NL weights against Q8_0 activations: two blocks per 512-bit step, the
// non-linear levels looked up with one byte shuffle.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// The 16 levels + 128 (unsigned, for dpbusd) in every 128-bit lane.
inline __m512i biased_levels() {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels));
    return _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
}

// Integer sums of blocks x0 and x1 with their activation pair `yv`: 16 int32, x0 in lanes 0..7, x1 in 8..15.
// The looked-up levels carry +128: dpbusd takes them unsigned and 128 * sum(y) is taken off.
inline __m512i pair_sums(const block_iq4_nl& x0, const block_iq4_nl& x1, __m512i yv, __m512i table) {
    const __m512i q = _mm512_shuffle_epi8(table, nibbles_2x16(x0.qs, x1.qs));
    return dot_biased(q, yv, _mm512_set1_epi8(static_cast<char>(0x80)));
}

// Word offsets of the f16 scales of four blocks for scale_products4: weights (18-byte blocks, all in the first
// 64 bytes), then activations.
alignas(64) constexpr std::int16_t scale_words[32] = {0, 9, 18, 27, 0, 17, 34, 51};

} // namespace

float dot_iq4_nl(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq4_nl*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    const __m512i table = biased_levels();
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const __m512 d = _mm512_castps128_ps512(scale_products4(x + b, x + b, y + b, scale_words));
        for (int h = 0; h < 2; ++h) {
            const std::size_t p = b + 2 * h;
            const __m512i sums = pair_sums(x[p], x[p + 1], load_2x32(y[p].qs, y[p + 1].qs), table);
            acc[h] = _mm512_fmadd_ps(spread2(d, 2 * h, 2 * h + 1), _mm512_cvtepi32_ps(sums), acc[h]);
        }
    }
    // The last blocks two at a time; a lone last block is paired with itself at scale 0.
    for (; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512 d = join_ps(half(x[b].d) * half(y[b].d), c != b ? half(x[c].d) * half(y[c].d) : 0.0f);
        const __m512i sums = pair_sums(x[b], x[c], load_2x32(y[b].qs, y[c].qs), table);
        acc[0] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums), acc[0]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

} // namespace sluice::kernels::avx512
