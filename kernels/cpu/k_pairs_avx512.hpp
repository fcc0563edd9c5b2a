// AVX-512 helpers for the Q4_K/Q5_K kernels, which take super-blocks in pairs: the two 12-byte scale fields are
// unpacked together in registers and the two minimum terms are one 512-bit multiply-add. Internal linkage, as in
// k_scales.hpp: include only from files built with the AVX-512 flags.
#pragma once

#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Index vector for permutexvar_epi16: lanes 0..15 pick word `a`, lanes 16..31 pick word `b`.
inline __m512i pick2(short a, short b) {
    return join(_mm256_set1_epi16(a), _mm256_set1_epi16(b));
}

/// The scale fields of two super-blocks (`a` in the low 128-bit lane, `b` in the high one), each as 8 scales
/// (bytes 0..7) and 8 minimums (bytes 8..15). Reads 16 bytes at each address: the block continues past the field.
inline __m256i unpack_scales_2(const std::uint8_t* a, const std::uint8_t* b) {
    const __m256i v =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
    // Low parts: scales 0-3 = b0-3 & 63, scales 4-7 = b8-11 & 15, mins 0-3 = b4-7 & 63, mins 4-7 = b8-11 >> 4.
    const __m256i lo_src = _mm256_shuffle_epi8(
        v, _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11)));
    const __m256i keep6or4 =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    const __m256i high_nibble =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    const __m256i low = _mm256_or_si256(_mm256_and_si256(lo_src, keep6or4),
                                        _mm256_and_si256(_mm256_srli_epi16(lo_src, 4), high_nibble));
    // High 2 bits of scales/mins 4-7: the top bits of b0-3 / b4-7, moved to bits 4-5.
    const __m256i hi_src = _mm256_shuffle_epi8(
        v, _mm256_broadcastsi128_si256(_mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)));
    return _mm256_or_si256(low, _mm256_and_si256(_mm256_srli_epi16(hi_src, 2), _mm256_set1_epi8(0x30)));
}

/// Weight side of a pair of Q4_K or Q5_K super-blocks: the 32 scale/min words (block 0: scales words 0-7, mins
/// 8-15; block 1: 16-23, 24-31).
template <class Block>
__m512i pair_words(const Block& a, const Block& b) {
    return _mm512_cvtepu8_epi16(unpack_scales_2(a.scales, b.scales));
}

/// Chunk c (values 64c..64c+63) of a Q4_K/Q5_K super-block's 4-bit parts, in activation order: the 32-byte run
/// qs[32c..] broadcast to both halves, its high nibbles shifted down in the upper half only.
inline __m512i nibble_chunk(const std::uint8_t* qs, int c) {
    const __m512i raw = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c)));
    return _mm512_and_si512(_mm512_mask_srli_epi16(raw, 0xffff0000u, raw, 4), _mm512_set1_epi8(0x0f));
}

/// Permutation indices of the scale vectors: chunk c of block h of a pair uses idx[4 * h + c] (words 0-15 pick
/// scale 2c, words 16-31 scale 2c+1), and mins_dup repeats each minimum once per 16-value sum of its group.
struct pair_indices {
    __m512i idx[8];
    __m512i mins_dup;
    pair_indices() {
        for (int h = 0; h < 2; ++h) {
            for (int c = 0; c < 4; ++c) {
                const short s = static_cast<short>(16 * h + 2 * c);
                idx[4 * h + c] = pick2(s, static_cast<short>(s + 1));
            }
        }
        mins_dup = _mm512_set_epi16(31, 31, 30, 30, 29, 29, 28, 28, 27, 27, 26, 26, 25, 25, 24, 24, 15, 15, 14, 14, 13,
                                    13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
    }
};

/// Minimum terms of a pair: lane i < 8 holds min[i] of block 0 times its group's activation sum, lanes 8..15 the
/// same for block 1 (all zero for a lone last block: pass zero sums).
inline __m512i pair_mins(__m512i words, const pair_indices& ix, __m256i bs0, __m256i bs1) {
    return _mm512_madd_epi16(join(bs0, bs1), _mm512_permutexvar_epi16(ix.mins_dup, words));
}

/// The sixteen 16-value activation sums of a Q8_K block.
inline __m256i bsums(const block_q8_k& y) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
}

/// Integer sum of block h of a pair against its activations: scale[g] * q * q8 in 16 lanes, q being the
/// block's four 64-value chunks in activation order.
inline __m512i block_sumi(const __m512i* q, __m512i words, const __m512i* idx, const std::int8_t* q8) {
    __m512i sumi = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
        sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(q8 + 64 * c)),
                                   _mm512_permutexvar_epi16(idx[c], words));
    }
    return sumi;
}

} // namespace
} // namespace sluice::kernels::avx512
