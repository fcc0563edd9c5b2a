// AVX-512 (BW + VNNI) kernels for the IQ1 formats (IQ1_S, IQ1_M) against Q8_K activations, one token and four.
// The ternary grid (2048 rows) is too large for register lookups, so rows are loaded one by one, their indices formed
// in general registers with BMI2's pdep (four per two deposits). The delta goes into the weights: 8 * (grid + delta) is
// one of -9, -7, -1, 1, 7, 9, never 0, so its magnitude and sign mask feed the same products as the IQ2 formats and the
// super-block sum stays the scalar reference's exact integer. Bit-identical to the scalar reference (iq1.cpp).
#include "kernels/cpu/iq_avx512.hpp"

#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/simd_kernels.hpp"

#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

// Four grid rows from four 11-bit indices packed as the words of `idx4`.
inline __m256i grid_rows4(std::uint64_t idx4) {
    return _mm256_set_epi64x(
        static_cast<long long>(iq1s_grid[idx4 >> 48]), static_cast<long long>(iq1s_grid[(idx4 >> 32) & 0xffff]),
        static_cast<long long>(iq1s_grid[(idx4 >> 16) & 0xffff]), static_cast<long long>(iq1s_grid[idx4 & 0xffff]));
}

// Indices of four groups as words: the low bytes from `qs` (4 bytes), the high bits deposited from `high` by `mask`.
// Formed in general registers (BMI2), whose units the vector work leaves idle; extracting indices formed in a vector
// register costs a shuffle each, on the units the row inserts need.
inline std::uint64_t indices4(const std::uint8_t* qs, std::uint64_t high, std::uint64_t mask) {
    std::uint32_t q;
    std::memcpy(&q, qs, 4);
    return _pdep_u64(q, 0x00ff00ff00ff00ffull) | (_pdep_u64(high, mask) & 0x0700070007000700ull);
}

// Magnitude and sign of 8 * (grid + delta) for the 64 values of pair p: `minus` has bit g set where group 8p + g
// (8 values) takes delta -1/8. The shuffle maps (grid & 3) | 4 * minus to 8 * grid +- 1; one bitwise select (bits
// 0..1 from the grid, the others from the masked 4s) forms that index.
inline void set_pair(iq_weights& w, int p, __m512i rows, __mmask8 minus) {
    const __m512i table = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 9, 0, -7, -1, 7, 0, -9, 0, 0, 0, 0, 0, 0, 0, 0));
    const __m512i fours = _mm512_maskz_mov_epi64(minus, _mm512_set1_epi8(4));
    const __m512i t = _mm512_ternarylogic_epi32(rows, fours, _mm512_set1_epi8(3), 0xe4);
    const __m512i w8 = _mm512_shuffle_epi8(table, t);
    w.mag[p] = _mm512_abs_epi8(w8);
    w.sign[p] = _cvtmask64_u64(_mm512_movepi8_mask(w8));
}

struct unpack_s {
    // The delta is one per run of 32, so its term is the run's activation sum (two of Q8_K's 16-value sums) times
    // (2s + 1) * (+-1); the grid part takes magnitudes |grid| with 8 * (2s + 1) as the scale.
    static constexpr bool uses_bsums = true;
    void operator()(const block_iq1_s& x, iq_weights& w) const {
        // Run k's word: 3 high index bits per group at bits 0..11, the 3-bit scale at 12, the delta sign at 15.
        const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
        const __m128i s = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(words, 12), _mm_set1_epi16(7)), 1),
                                       _mm_set1_epi16(1));
        // Delta weights per 16-value sum: run k's (2s + 1), negated where bit 15 is set, for sums 2k and 2k + 1.
        const __m128i ds = _mm_mask_sub_epi16(s, _mm_movepi16_mask(words), _mm_setzero_si128(), s);
        w.bsum_weight = _mm256_cvtepu16_epi32(ds);
        w.bsum_weight = _mm256_or_si256(w.bsum_weight, _mm256_slli_epi32(w.bsum_weight, 16));
        const __m256i s8 = _mm256_cvtepu16_epi32(_mm_slli_epi16(s, 3));
        const __m512i sw = _mm512_castsi256_si512(_mm256_or_si256(s8, _mm256_slli_epi32(s8, 16)));
        for (int p = 0; p < 4; ++p) {
            const __m512i g = join(grid_rows4(indices4(x.qs + 8 * p, x.qh[2 * p], 0x0700070007000700ull)),
                                   grid_rows4(indices4(x.qs + 8 * p + 4, x.qh[2 * p + 1], 0x0700070007000700ull)));
            w.mag[p] = _mm512_abs_epi8(g);
            w.sign[p] = _cvtmask64_u64(_mm512_movepi8_mask(g));
            w.scale[p] = _mm512_permutexvar_epi32(pick_halves(2 * p, 2 * p + 1), sw);
        }
        w.factor = 0.125f * half(x.d);
    }
};

struct unpack_m {
    static constexpr bool uses_bsums = false;
    void operator()(const block_iq1_m& x, iq_weights& w) const {
        // Group k's nibble (qh[k / 2], low nibble first): 3 high index bits and the delta sign at bit 3.
        const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
        const __m128i m = _mm_set1_epi8(0x0f);
        const __m128i a = _mm_and_si128(qh, m), b = _mm_and_si128(_mm_srli_epi16(qh, 4), m);
        const __m256i nib = _mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b));
        const std::uint32_t minus = _cvtmask32_u32(_mm256_test_epi8_mask(nib, _mm256_set1_epi8(8)));
        // Sixteen 3-bit scales, four per word at bits 0..11; the f16 super-scale in the words' top nibbles.
        std::uint16_t sc[4];
        std::memcpy(sc, x.scales, 8);
        const __m512i pick = _mm512_set_epi16(0, 3, 0, 3, 0, 3, 0, 3, 0, 2, 0, 2, 0, 2, 0, 2, 0, 1, 0, 1, 0, 1, 0, 1, 0,
                                              0, 0, 0, 0, 0, 0, 0);
        const __m512i words = _mm512_permutexvar_epi16(
            pick, _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.scales))));
        const __m512i shift = _mm512_set_epi32(9, 6, 3, 0, 9, 6, 3, 0, 9, 6, 3, 0, 9, 6, 3, 0);
        const __m512i s = _mm512_or_si512(
            _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(words, shift), _mm512_set1_epi32(7)), 1),
            _mm512_set1_epi32(1));
        const __m512i sw = _mm512_or_si512(s, _mm512_slli_epi32(s, 16));
        const __m512i quarter[4] = {_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                    _mm512_set_epi32(7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4),
                                    _mm512_set_epi32(11, 11, 11, 11, 10, 10, 10, 10, 9, 9, 9, 9, 8, 8, 8, 8),
                                    _mm512_set_epi32(15, 15, 15, 15, 14, 14, 14, 14, 13, 13, 13, 13, 12, 12, 12, 12)};
        for (int p = 0; p < 4; ++p) {
            std::uint16_t h[2];
            std::memcpy(h, x.qh + 4 * p, 4);
            const __m512i rows = join(grid_rows4(indices4(x.qs + 8 * p, h[0], 0x0f000f000f000f00ull)),
                                      grid_rows4(indices4(x.qs + 8 * p + 4, h[1], 0x0f000f000f000f00ull)));
            set_pair(w, p, rows, _cvtu32_mask8((minus >> (8 * p)) & 0xff));
            w.scale[p] = _mm512_permutexvar_epi32(quarter[p], sw);
        }
        const auto d = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                                  (sc[3] & 0xf000));
        w.factor = 0.125f * half(d);
    }
};

} // namespace

float dot_iq1_s(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq1_s>(n, w, a, unpack_s{});
}
float dot_iq1_m(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq1_m>(n, w, a, unpack_m{});
}
void dot4_iq1_s(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq1_s>(n, w, a, s, o, unpack_s{});
}
void dot4_iq1_m(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq1_m>(n, w, a, s, o, unpack_m{});
}

} // namespace sluice::kernels::avx512
