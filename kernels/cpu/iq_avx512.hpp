// Shared steps of the AVX-512 kernels for the IQ1/IQ2/IQ3 formats; include only from files built with the AVX-512
// flags. A super-block is unpacked once into four pairs of runs (64 values each): magnitudes as unsigned bytes, a
// 64-bit sign mask applied to the activations with one masked subtraction, and per-value scales as words. Each token
// then costs one load, one masked subtraction, one maddubs and one dpwssd per pair; the super-block's integer sum is
// exact and its float step is the scalar reference's, so results equal the scalar kernels' bit for bit.
//
// For the smaller grids (IQ2_XXS, IQ3_XXS, IQ3_S: 256-512 rows) rows are not loaded one by one: each row is stored
// as a 16-bit code (`iq_codes`), and 32 rows are looked up at once from the code table with word permutes (64 rows
// per two-register permute), then expanded to bytes: IQ2_XXS rows through bit-plane masks and byte blends, IQ3 rows
// with a shift and a 16-entry byte shuffle. The larger grids (IQ2_XS, IQ2_S, IQ1: 512-2048 rows of 8) are loaded row
// by row, which measured faster than 8 or more permutes per 32 rows (and than gathers); the IQ1 and IQ2 indices
// are formed in general registers, since GCC takes indices out of a vector register with one shuffle each.
#pragma once

#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace sluice::kernels::avx512 {

/// Grid rows as 16-bit codes. Rows of 8 values (the IQ2 grids, three levels) as two bit planes: bit j set where
/// value j is above the lowest level, bit 8 + j where it is the highest. Rows of 4 values (the IQ3 grids, up to 8
/// levels) as 3-bit level indices: values 0 and 1 at bits 0..2 and 8..10, values 2 and 3 at bits 3..5 and 11..13.
/// `levels` maps a level index to the grid's byte value.
template <std::size_t Rows>
struct iq_codes {
    alignas(64) std::uint16_t code[Rows];
    std::uint8_t levels[16];
    bool ok = true; ///< false if the grid had more distinct values than the code has room for
};

/// Builds the code table of `grid` (Rows rows of RowValues bytes, little-endian in each word).
template <std::size_t Rows, int RowValues, class Word>
iq_codes<Rows> make_iq_codes(const Word* grid) {
    iq_codes<Rows> t{};
    constexpr int bits = RowValues == 8 ? 2 : 3;
    constexpr int max_levels = RowValues == 8 ? 3 : 8;
    int n_levels = 0;
    for (std::size_t i = 0; i < Rows; ++i) {
        for (int j = 0; j < RowValues; ++j) {
            const auto v = static_cast<std::uint8_t>(grid[i] >> (8 * j));
            if (std::find(t.levels, t.levels + n_levels, v) == t.levels + n_levels) {
                if (n_levels == max_levels) {
                    t.ok = false;
                    return t;
                }
                t.levels[n_levels++] = v;
            }
        }
    }
    std::sort(t.levels, t.levels + n_levels);
    for (std::size_t i = 0; i < Rows; ++i) {
        unsigned code = 0;
        for (int j = 0; j < RowValues; ++j) {
            const auto v = static_cast<std::uint8_t>(grid[i] >> (8 * j));
            const auto lvl = static_cast<unsigned>(std::find(t.levels, t.levels + n_levels, v) - t.levels);
            if constexpr (RowValues == 8) {
                code |= (lvl >= 1 ? 1u << j : 0u) | (lvl >= 2 ? 0x100u << j : 0u);
            } else {
                code |= lvl << ((j & 1) * 8 + (j >> 1) * bits);
            }
        }
        t.code[i] = static_cast<std::uint16_t>(code);
    }
    return t;
}

/// The codes of 32 rows: word i of the result is code[idx word i]; every index must be below Rows (64 << k).
template <std::size_t Rows>
inline __m512i lookup_codes(const iq_codes<Rows>& t, __m512i idx) {
    static_assert(Rows >= 64 && (Rows & (Rows - 1)) == 0);
    const auto* tab = reinterpret_cast<const __m512i*>(t.code);
    __m512i r[Rows / 64];
    for (std::size_t k = 0; k < Rows / 64; ++k) {
        r[k] = _mm512_permutex2var_epi16(_mm512_load_si512(tab + 2 * k), idx, _mm512_load_si512(tab + 2 * k + 1));
    }
    // Select among the 64-row pieces by index bits 6, 7, ... (a binary tree of blends).
    std::size_t n = Rows / 64;
    for (int bit = 6; n > 1; ++bit, n /= 2) {
        const __mmask32 hi = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(static_cast<short>(1 << bit)));
        for (std::size_t k = 0; k < n / 2; ++k) {
            r[k] = _mm512_mask_blend_epi16(hi, r[2 * k], r[2 * k + 1]);
        }
    }
    return r[0];
}

/// The byte levels of `t` in every 128-bit lane, for _mm512_shuffle_epi8.
template <std::size_t Rows>
inline __m512i level_table(const iq_codes<Rows>& t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.levels)));
}

/// The magnitudes of 32 rows of 8 (four pairs of 64 values) from their plane codes: each plane of 8 rows is one
/// 64-bit mask, so a pair costs two byte blends and no shuffles.
template <std::size_t Rows>
inline void plane_magnitudes(const iq_codes<Rows>& t, __m512i codes, __m512i* mag) {
    alignas(32) std::uint64_t above[4], top[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(above), _mm512_cvtepi16_epi8(codes));
    _mm256_store_si256(reinterpret_cast<__m256i*>(top), _mm512_cvtepi16_epi8(_mm512_srli_epi16(codes, 8)));
    const __m512i l0 = _mm512_set1_epi8(static_cast<char>(t.levels[0]));
    const __m512i l1 = _mm512_set1_epi8(static_cast<char>(t.levels[1]));
    const __m512i l2 = _mm512_set1_epi8(static_cast<char>(t.levels[2]));
    for (int p = 0; p < 4; ++p) {
        mag[p] = _mm512_mask_blend_epi8(_cvtu64_mask64(top[p]),
                                        _mm512_mask_blend_epi8(_cvtu64_mask64(above[p]), l0, l1), l2);
    }
}

/// 64 grid values from codes of rows of 4: byte 4r + j is value j of the row whose code is word first + r of
/// `codes` (r < 16). `pick` must be the word permute {first + r for words 2r, 2r + 1}.
inline __m512i expand_rows4(__m512i codes, __m512i pick, __m512i levels) {
    const __m512i shift = _mm512_set1_epi32(0x00030000);
    const __m512i e = _mm512_srlv_epi16(_mm512_permutexvar_epi16(pick, codes), shift);
    return _mm512_shuffle_epi8(levels, _mm512_and_si512(e, _mm512_set1_epi16(0x0707)));
}

/// Word permute for expand_rows4: words 2r, 2r+1 take word first + r.
inline __m512i pick_rows4(int first) {
    alignas(64) std::int16_t w[32];
    for (int i = 0; i < 32; ++i) {
        w[i] = static_cast<std::int16_t>(first + i / 2);
    }
    return _mm512_load_si512(w);
}

/// Dword permute giving dwords 0..7 dword a and dwords 8..15 dword b.
inline __m512i pick_halves(int a, int b) {
    return join(_mm256_set1_epi32(a), _mm256_set1_epi32(b));
}

/// Bit 0 of each byte of the result is the parity of bits 0..6 of that byte of `t` (bit 7 of each byte must be 0;
/// the other bits of the result are unspecified). The shifts stay inside a byte for bit 0.
inline __m256i parity_bits(__m256i t) {
    __m256i p = _mm256_xor_si256(t, _mm256_srli_epi32(t, 4));
    p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 2));
    return _mm256_xor_si256(p, _mm256_srli_epi32(p, 1));
}

/// The IQ2_XXS / IQ3_XXS sign bytes of eight 32-bit run words: byte 4k + l is the sign byte (bit j set: value j
/// negative) of group l of run k, from the 7-bit index at bit 7l of dword k with the even-parity eighth bit.
inline __m256i xxs_sign_bytes(__m256i aux) {
    const __m256i m = _mm256_set1_epi32(0x7f);
    __m256i t =
        _mm256_or_si256(_mm256_and_si256(aux, m), _mm256_and_si256(_mm256_slli_epi32(aux, 1), _mm256_slli_epi32(m, 8)));
    t = _mm256_or_si256(t, _mm256_and_si256(_mm256_slli_epi32(aux, 2), _mm256_slli_epi32(m, 16)));
    t = _mm256_or_si256(t, _mm256_and_si256(_mm256_slli_epi32(aux, 3), _mm256_slli_epi32(m, 24)));
    return _mm256_or_si256(t, _mm256_slli_epi32(_mm256_and_si256(parity_bits(t), _mm256_set1_epi8(1)), 7));
}

/// Dwords of (2s + 1) in both words, for s the 4 bits at 28..31 of each dword of `aux`.
inline __m256i xxs_scale_words(__m256i aux) {
    const __m256i s = _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(aux, 28), 1), _mm256_set1_epi32(1));
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

/// One unpacked super-block: pair p holds values 64p..64p+63.
struct iq_weights {
    __m512i mag[4];        // unsigned magnitudes
    __m512i scale[4];      // per-value-pair scales as words (maddubs output word i gets word i)
    std::uint64_t sign[4]; // bit i set: value 64p + i is negative
    __m256i bsum_weight;   // with Unpack::uses_bsums: the weight of each 16-value activation sum, as words
    float factor;          // the super-block's float factor, as the scalar reference forms it
};

/// One unpacked super-block times one token's activations as 16 int32 lanes whose sum is the exact integer sum
/// (two accumulators, so the dependency chain is two products deep). With Bsums, plus the activations' 16-value
/// sums times w.bsum_weight (IQ1_S's delta term).
template <bool Bsums = false>
inline __m512i block_lanes(const iq_weights& w, const block_q8_k& y) {
    __m512i acc[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    if constexpr (Bsums) {
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
        acc[0] = _mm512_zextsi256_si512(_mm256_madd_epi16(bs, w.bsum_weight));
    }
    for (int p = 0; p < 4; ++p) {
        const __m512i yv = _mm512_loadu_si512(y.qs + 64 * p);
        const __m512i ys = _mm512_mask_sub_epi8(yv, _cvtu64_mask64(w.sign[p]), _mm512_setzero_si512(), yv);
        acc[p % 2] = _mm512_dpwssd_epi32(acc[p % 2], _mm512_maddubs_epi16(w.mag[p], ys), w.scale[p]);
    }
    return _mm512_add_epi32(acc[0], acc[1]);
}

/// The lane sums of four vectors, exact: element i of the result is the sum of the 16 lanes of the i-th argument.
/// One transpose-and-add instead of four horizontal sums.
inline __m128i sum_lanes4(__m512i a, __m512i b, __m512i c, __m512i d) {
    const __m512i ab = _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xee));
    const __m512i cd = _mm512_add_epi32(_mm512_shuffle_i64x2(c, d, 0x44), _mm512_shuffle_i64x2(c, d, 0xee));
    __m512i s = _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88), _mm512_shuffle_i32x4(ab, cd, 0xdd));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_CDAB));
    return _mm512_castsi512_si128(
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), s));
}

/// sum(factor * y.d * isum) over n / 256 super-blocks in the scalar reference's order of float operations; the
/// integer sums of four super-blocks are finished together.
template <class Block, class Unpack>
float dot_iq(std::size_t n, const void* w, const void* act, const Unpack& unpack) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const std::size_t nb = n / qk_k;
    iq_weights qw;
    float sum = 0;
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        __m512i lanes[4];
        float factor[4];
        // Unrolled, so the four super-blocks' unpacking and products interleave (GCC keeps the loop otherwise).
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            unpack(x[b + k], qw);
            lanes[k] = block_lanes<Unpack::uses_bsums>(qw, y[b + k]);
            factor[k] = qw.factor;
        }
        alignas(16) std::int32_t isum[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(isum), sum_lanes4(lanes[0], lanes[1], lanes[2], lanes[3]));
        for (int k = 0; k < 4; ++k) {
            sum += factor[k] * y[b + k].d * static_cast<float>(isum[k]);
        }
    }
    for (; b < nb; ++b) {
        unpack(x[b], qw);
        sum +=
            qw.factor * y[b].d * static_cast<float>(_mm512_reduce_add_epi32(block_lanes<Unpack::uses_bsums>(qw, y[b])));
    }
    return sum;
}

/// dot_iq for four tokens (token t at act + t * act_stride), each result bit-identical to dot_iq's.
template <class Block, class Unpack>
void dot4_iq(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out, const Unpack& unpack) {
    const auto* x = static_cast<const Block*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    iq_weights qw;
    float sum[4] = {0, 0, 0, 0};
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], qw);
        alignas(16) std::int32_t isum[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(isum), sum_lanes4(block_lanes<Unpack::uses_bsums>(qw, y[0][b]),
                                                                     block_lanes<Unpack::uses_bsums>(qw, y[1][b]),
                                                                     block_lanes<Unpack::uses_bsums>(qw, y[2][b]),
                                                                     block_lanes<Unpack::uses_bsums>(qw, y[3][b])));
        for (int t = 0; t < 4; ++t) {
            sum[t] += qw.factor * y[t][b].d * static_cast<float>(isum[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = sum[t];
    }
}

} // namespace sluice::kernels::avx512
