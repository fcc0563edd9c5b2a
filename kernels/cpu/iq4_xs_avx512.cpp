// AVX-512 (BW + VNNI) kernel for IQ4_XS weights against Q8_K activations: two 32-value groups per 512-bit step,
// the non-linear levels looked up with one byte shuffle.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

// The eight signed 6-bit group scales of a super-block as bytes in [-32, 31] (lanes 0..7): the low nibbles
// (two per byte) and the 2-bit high parts spread to one byte each with shifts and masks.
inline __m128i group_scales(const block_iq4_xs& x) {
    std::uint32_t l = 0;
    std::memcpy(&l, x.scales_l, 4);
    std::uint64_t lo = l;
    lo = (lo | (lo << 16)) & 0x0000ffff0000ffffull;
    lo = (lo | (lo << 8)) & 0x00ff00ff00ff00ffull;
    lo = (lo | (lo << 4)) & 0x0f0f0f0f0f0f0f0full;
    std::uint64_t hi = x.scales_h;
    hi = (hi | (hi << 24)) & 0x000000ff000000ffull;
    hi = (hi | (hi << 12)) & 0x000f000f000f000full;
    hi = (hi | (hi << 6)) & 0x0303030303030303ull;
    return _mm_sub_epi8(_mm_cvtsi64_si128(static_cast<long long>(lo | (hi << 4))), _mm_set1_epi8(32));
}

} // namespace

// Levels carry +128 so that dpbusd takes them unsigned. Per super-block the integer sum is
// sum_g ls_g * (sum(level_u * y) over group g) - 128 * sum_g ls_g * sum(y over g), the second term from bsums.
float dot_iq4_xs(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_iq4_xs*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_levels));
    const __m512i table = _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
    const __m512i zero = _mm512_setzero_si512();
    // Step k covers groups 2k (lanes 0..7) and 2k+1 (lanes 8..15).
    const __m512i pick[4] = {
        join(_mm256_set1_epi32(0), _mm256_set1_epi32(1)), join(_mm256_set1_epi32(2), _mm256_set1_epi32(3)),
        join(_mm256_set1_epi32(4), _mm256_set1_epi32(5)), join(_mm256_set1_epi32(6), _mm256_set1_epi32(7))};
    __m512 acc = _mm512_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const __m128i ls8 = group_scales(x[b]);
        const __m512i ls = _mm512_cvtepi8_epi32(ls8);
        // Bias term: group sums of y (pairs of bsums) times the scales, times 128, in lanes 0..3.
        const __m128i ysum = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums + 8)));
        const __m128i bias = _mm_slli_epi32(_mm_madd_epi16(ysum, _mm_cvtepi8_epi16(ls8)), 7);
        __m512i sumi = _mm512_zextsi128_si512(_mm_sub_epi32(_mm_setzero_si128(), bias));
        for (int j = 0; j < 2; ++j) {
            // 64 packed bytes = groups 4j..4j+3, one per 128-bit lane; each step takes two of them.
            const __m512i raw = _mm512_loadu_si512(x[b].qs + 64 * j);
            const __m512i pairs[2] = {_mm512_shuffle_i64x2(raw, raw, _MM_SHUFFLE(1, 1, 0, 0)),
                                      _mm512_shuffle_i64x2(raw, raw, _MM_SHUFFLE(3, 3, 2, 2))};
            for (int h = 0; h < 2; ++h) {
                const int k = 2 * j + h;
                const __m512i q = _mm512_shuffle_epi8(table, split_nibbles(pairs[h]));
                const __m512i prod = _mm512_dpbusd_epi32(zero, q, _mm512_loadu_si512(y[b].qs + 64 * k));
                sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(prod, _mm512_permutexvar_epi32(pick[k], ls)));
            }
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

} // namespace sluice::kernels::avx512
