// AVX-512 (BW + VNNI) kernels for Q3_K weights against Q8_K activations: the 2-bit parts in the chunk order of
// Q2_K's 512-bit kernel (64 consecutive values per register, one activation load each), the hmask bit of each value
// added as 4 under a byte mask (values taken as q + 4, the bias taken off with the activation block sums), and
// signed scales. The 12-byte scale field is unpacked in one register (two byte shuffles and two word shifts), and
// each 16-value group's scale reaches its 128-bit lane through an in-lane byte shuffle.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Constants of the unpacking, built once per call.
struct picks {
    __m512i word[4];    // chunk c: bytes 4c, 4c + 1 of each lane repeated (the lane's scale as a word)
    __m512i bit[4];     // chunk c: the hmask bit of runs 2c (low half) and 2c + 1 (high half)
    __m512i shift[2];   // chunk c: word shifts 4 (c % 2) in the low half, 4 (c % 2) + 2 in the high half
    __m128i lane_order; // scale bytes reordered so byte 4k + c is group 4c + k (lane k of chunk c)
    picks() {
        for (int c = 0; c < 4; ++c) {
            const auto lo = static_cast<char>(4 * c), hi = static_cast<char>(4 * c + 1);
            word[c] =
                _mm512_broadcast_i32x4(_mm_setr_epi8(lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi));
            bit[c] = join(_mm256_set1_epi8(static_cast<char>(1 << (2 * c))),
                          _mm256_set1_epi8(static_cast<char>(2 << (2 * c))));
        }
        for (int odd = 0; odd < 2; ++odd) {
            shift[odd] = join(_mm256_set1_epi16(static_cast<short>(4 * odd)),
                              _mm256_set1_epi16(static_cast<short>(4 * odd + 2)));
        }
        alignas(16) std::int8_t order[16];
        for (int k = 0; k < 4; ++k) {
            for (int c = 0; c < 4; ++c) {
                order[4 * k + c] = static_cast<std::int8_t>(4 * c + k);
            }
        }
        lane_order = _mm_load_si128(reinterpret_cast<const __m128i*>(order));
    }
};

// The 16 signed scales (bytes, group order) of a Q3_K scale field: low nibbles from bytes 0-7 (groups 0-7) and
// their high nibbles (groups 8-15), the top two bits from bytes 8-11 at shift 2 * (group / 4); stored +32.
// Reads only the 12 bytes of the field (masked load).
inline __m128i unpack_scales(const std::uint8_t* q) {
    const __m128i v = _mm_maskz_loadu_epi8(0x0fff, q);
    const __m128i lo_src = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7));
    const __m128i lo =
        _mm_and_si128(_mm_srlv_epi16(lo_src, _mm_setr_epi16(0, 0, 0, 0, 4, 4, 4, 4)), _mm_set1_epi8(0x0f));
    const __m128i hi_src = _mm_shuffle_epi8(v, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi16(hi_src, _mm_setr_epi16(0, 0, 2, 2, 4, 4, 6, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

// The weight side of one super-block, unpacked once and shared by every token.
struct q3_weights {
    __m512i u[4];     // chunk c: values 64c..64c+63 as q + 4
    __m512i scale[4]; // chunk c: the matching group scales as signed words
    __m256i scales;   // the 16 scales as words, group order
    float d;
};

inline void unpack(const block_q3_k& x, const picks& pk, q3_weights& w) {
    const __m128i sc = unpack_scales(x.scales);
    w.scales = _mm256_cvtepi8_epi16(sc);
    // Lane k holds the scales of groups k, 4 + k, 8 + k, 12 + k as dwords 0..3 (sign-extended: the low word is the
    // scale).
    const __m512i lanes = _mm512_cvtepi8_epi32(_mm_shuffle_epi8(sc, pk.lane_order));
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.hmask)));
    for (int c = 0; c < 4; ++c) {
        const __m512i half =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * (c / 2))));
        const __m512i low = _mm512_and_si512(_mm512_srlv_epi16(half, pk.shift[c % 2]), _mm512_set1_epi8(3));
        w.u[c] = _mm512_mask_add_epi8(low, _mm512_test_epi8_mask(hm, pk.bit[c]), low, _mm512_set1_epi8(4));
        w.scale[c] = _mm512_shuffle_epi8(lanes, pk.word[c]);
    }
    w.d = half(x.d);
}

// One super-block of one token added to its accumulator; dot_q3_k and dot4_q3_k share it.
inline void step(const q3_weights& w, const block_q8_k& y, __m512& acc) {
    __m512i sumi = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
        const __m512i p = _mm512_maddubs_epi16(w.u[c], _mm512_loadu_si512(y.qs + 64 * c));
        sumi = _mm512_dpwssd_epi32(sumi, p, w.scale[c]);
    }
    const __m256i bias = _mm256_madd_epi16(w.scales, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
    sumi = _mm512_sub_epi32(sumi, _mm512_zextsi256_si512(_mm256_slli_epi32(bias, 2)));
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y.d * w.d), _mm512_cvtepi32_ps(sumi), acc);
}

} // namespace

float dot_q3_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q3_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const picks pk;
    __m512 acc = _mm512_setzero_ps();
    q3_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], pk, qw);
        step(qw, y[b], acc);
    }
    return _mm512_reduce_add_ps(acc);
}

void dot4_q3_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q3_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const picks pk;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    q3_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], pk, qw);
        for (int t = 0; t < 4; ++t) {
            step(qw, y[t][b], acc[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(acc[t]);
    }
}

} // namespace sluice::kernels::avx512
