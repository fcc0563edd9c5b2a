// AVX-512 (BW + VNNI) kernels for Q4_K weights against Q8_K activations.
//
// Super-blocks go in pairs: the two 12-byte scale fields are unpacked together in registers (one per 128-bit
// lane) and the two minimum terms are one 512-bit multiply-add, which halves the per-super-block bookkeeping
// that dominated this kernel (docs/PERFORMANCE.md, "Q4_K: what its kernel spends"). Each 32-byte nibble run is
// broadcast to both halves of a register and its high nibbles shifted down in the upper half only, so values
// 64c..64c+63 line up with 64 contiguous activation bytes.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
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
    const __m256i v = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
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

/// Weight side of a pair: the 32 scale/min words (block 0: scales words 0-7, mins 8-15; block 1: 16-23, 24-31).
inline __m512i pair_words(const block_q4_k& a, const block_q4_k& b) {
    return _mm512_cvtepu8_epi16(unpack_scales_2(a.scales, b.scales));
}

/// Chunk c (values 64c..64c+63) of a super-block as 64 nibble values in activation order.
inline __m512i chunk_values(const block_q4_k& x, int c) {
    const __m512i raw =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * c)));
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
        mins_dup = _mm512_set_epi16(31, 31, 30, 30, 29, 29, 28, 28, 27, 27, 26, 26, 25, 25, 24, 24, 15, 15, 14, 14,
                                    13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
    }
};

/// Minimum terms of a pair: lane i < 8 holds min[i] of block 0 times its group's activation sum, lanes 8..15 the
/// same for block 1 (all zero for a lone last block: pass zero sums).
inline __m512i pair_mins(__m512i words, const pair_indices& ix, __m256i bs0, __m256i bs1) {
    return _mm512_madd_epi16(join(bs0, bs1), _mm512_permutexvar_epi16(ix.mins_dup, words));
}

inline __m256i bsums(const block_q8_k& y) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
}

/// Integer sum of block h of a pair against its activations: scale[g] * q4 * q8 in 16 lanes.
inline __m512i block_sumi(const __m512i* q, __m512i words, const __m512i* idx, const std::int8_t* q8) {
    __m512i sumi = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
        sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(q8 + 64 * c)),
                                   _mm512_permutexvar_epi16(idx[c], words));
    }
    return sumi;
}

} // namespace

// Blocks b and b+1 share their bookkeeping; a lone last block is paired with itself and its twin's minimum lanes
// are zero. The float steps are those of dot4_q4_k, so both give bit-identical results.
float dot_q4_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    __m512 acc = _mm512_setzero_ps();
    __m512 acc_m = _mm512_setzero_ps();
    std::size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i words = pair_words(x[b], x[b + 1]);
        acc_m = _mm512_fmadd_ps(join_ps(y[b].d * half(x[b].dmin), y[b + 1].d * half(x[b + 1].dmin)),
                                _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(y[b]), bsums(y[b + 1]))), acc_m);
        for (int h = 0; h < 2; ++h) {
            const __m512i q[4] = {chunk_values(x[b + h], 0), chunk_values(x[b + h], 1), chunk_values(x[b + h], 2),
                                  chunk_values(x[b + h], 3)};
            const __m512i sumi = block_sumi(q, words, ix.idx + 4 * h, y[b + h].qs);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b + h].d * half(x[b + h].d)), _mm512_cvtepi32_ps(sumi), acc);
        }
    }
    if (b < nb) {
        const __m512i words = pair_words(x[b], x[b]);
        acc_m = _mm512_fmadd_ps(join_ps(y[b].d * half(x[b].dmin), 0.0f),
                                _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(y[b]), _mm256_setzero_si256())), acc_m);
        const __m512i q[4] = {chunk_values(x[b], 0), chunk_values(x[b], 1), chunk_values(x[b], 2),
                              chunk_values(x[b], 3)};
        const __m512i sumi = block_sumi(q, words, ix.idx, y[b].qs);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(acc_m);
}

void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    __m512 acc[4], acc_m[4];
    for (int t = 0; t < 4; ++t) {
        acc[t] = acc_m[t] = _mm512_setzero_ps();
    }
    for (std::size_t b = 0; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        const int n_h = pair ? 2 : 1;
        // Weight side once for the four tokens: scale words and the nibble values of both blocks.
        const __m512i words = pair_words(x[b], x[pair ? b + 1 : b]);
        __m512i q[2][4];
        for (int h = 0; h < n_h; ++h) {
            for (int c = 0; c < 4; ++c) {
                q[h][c] = chunk_values(x[b + h], c);
            }
        }
        const float dmin0 = half(x[b].dmin), dmin1 = pair ? half(x[b + 1].dmin) : 0.0f;
        for (int t = 0; t < 4; ++t) {
            const block_q8_k* yt = y[t];
            const __m256i bs1 = pair ? bsums(yt[b + 1]) : _mm256_setzero_si256();
            acc_m[t] = _mm512_fmadd_ps(join_ps(yt[b].d * dmin0, pair ? yt[b + 1].d * dmin1 : 0.0f),
                                       _mm512_cvtepi32_ps(pair_mins(words, ix, bsums(yt[b]), bs1)), acc_m[t]);
            for (int h = 0; h < n_h; ++h) {
                const __m512i sumi = block_sumi(q[h], words, ix.idx + 4 * h, yt[b + h].qs);
                acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(yt[b + h].d * half(x[b + h].d)), _mm512_cvtepi32_ps(sumi),
                                         acc[t]);
            }
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(acc[t]) - _mm512_reduce_add_ps(acc_m[t]);
    }
}

} // namespace sluice::kernels::avx512
