// AVX-512 (BW + VNNI) kernel for Q4_1 weights (4-bit values with scale and minimum) against Q8_0 activations:
// two blocks per 512-bit step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Word offsets for gather_halves: the scales d (fields 0..3) and minimums m (4..7) of four 20-byte weight blocks,
// all in the first 64 bytes, then the four activation scales twice (8..11, 12..15).
alignas(64) constexpr std::int16_t scale_words[32] = {0, 10, 20, 30, 1, 11, 21, 31, 0, 17, 34, 51, 0, 17, 34, 51};

} // namespace

// Per block: d * dy * sum(q * y) + m * dy * sum(y), both integer sums taken with dpbusd (q is unsigned).
float dot_q4_1(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_1*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    const __m512i zero = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    __m512 acc_m[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        // Lanes 0..3: d * dy of blocks b..b+3; lanes 4..7: m * dy.
        const auto* yb = reinterpret_cast<const std::uint8_t*>(y + b);
        const __m512 f = gather_halves(x + b, x + b, yb, yb + 64, scale_words, 0xff00);
        const __m512 dm = _mm512_mul_ps(f, _mm512_shuffle_f32x4(f, f, _MM_SHUFFLE(3, 2, 3, 2)));
        for (int h = 0; h < 2; ++h) {
            const std::size_t p = b + 2 * h;
            const __m512i yv = load_2x32(y[p].qs, y[p + 1].qs);
            const __m512i sq = _mm512_dpbusd_epi32(zero, nibbles_2x16(x[p].qs, x[p + 1].qs), yv);
            const __m512i sy = _mm512_dpbusd_epi32(zero, ones, yv);
            acc[h] = _mm512_fmadd_ps(spread2(dm, 2 * h, 2 * h + 1), _mm512_cvtepi32_ps(sq), acc[h]);
            acc_m[h] = _mm512_fmadd_ps(spread2(dm, 4 + 2 * h, 5 + 2 * h), _mm512_cvtepi32_ps(sy), acc_m[h]);
        }
    }
    // The last blocks two at a time; a lone last block is paired with itself at scale 0.
    for (; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        // Scale 0 for a block's second copy; products (not factors) are zeroed so that no inf * 0 arises.
        const float dy0 = half(y[b].d);
        const float dy1 = half(y[c].d);
        const __m512 d = join_ps(half(x[b].d) * dy0, c != b ? half(x[c].d) * dy1 : 0.0f);
        const __m512 m = join_ps(half(x[b].m) * dy0, c != b ? half(x[c].m) * dy1 : 0.0f);
        const __m512i yv = load_2x32(y[b].qs, y[c].qs);
        const __m512i sq = _mm512_dpbusd_epi32(zero, nibbles_2x16(x[b].qs, x[c].qs), yv);
        const __m512i sy = _mm512_dpbusd_epi32(zero, ones, yv);
        acc[0] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sq), acc[0]);
        acc_m[0] = _mm512_fmadd_ps(m, _mm512_cvtepi32_ps(sy), acc_m[0]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc_m[0], acc_m[1])));
}

} // namespace sluice::kernels::avx512
