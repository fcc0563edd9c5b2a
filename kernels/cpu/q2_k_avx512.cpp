// AVX-512 (BW + VNNI) kernels for Q2_K weights against Q8_K activations. Chunk c (values 64c..64c+63, runs 2c and
// 2c + 1) comes from the 32 bytes of half c / 2 broadcast to both 256-bit halves and shifted by 4 (c % 2) in the low
// half and 2 more in the high one, so it meets 64 consecutive activation bytes (one load). Each 128-bit lane of a
// chunk is one 16-value group, so the value times its group scale (at most 3 * 15 = 45) comes from one in-lane byte
// lookup in a table of the four multiples of each group's scale, and one dpbusd per 64 values adds scale * value *
// activation.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

// Constants of the unpacking, built once per call.
struct picks {
    __m128i lane_order; // scale bytes reordered so byte 4k + c is group 4c + k (lane k of chunk c)
    __m512i offset[4];  // chunk c: 4c in every byte, the table row of chunk c within a lane
    __m512i shift[2];   // chunk c: word shifts 4 (c % 2) in the low half, 4 (c % 2) + 2 in the high half
    picks() {
        alignas(16) std::int8_t order[16];
        for (int k = 0; k < 4; ++k) {
            for (int c = 0; c < 4; ++c) {
                order[4 * k + c] = static_cast<std::int8_t>(4 * c + k);
            }
        }
        lane_order = _mm_load_si128(reinterpret_cast<const __m128i*>(order));
        for (int c = 0; c < 4; ++c) {
            offset[c] = _mm512_set1_epi8(static_cast<char>(4 * c));
        }
        for (int odd = 0; odd < 2; ++odd) {
            shift[odd] = join(_mm256_set1_epi16(static_cast<short>(4 * odd)),
                              _mm256_set1_epi16(static_cast<short>(4 * odd + 2)));
        }
    }
};

// The weight side of one super-block, unpacked once and shared by every token.
struct q2_weights {
    __m512i v[4]; // chunk c: values 64c..64c+63 times their group scales (0..45)
    __m256i mins; // the 16 minimums as words
    __m128 d;     // d and dmin in lanes 0 and 1
};

inline void unpack(const block_q2_k& x, const picks& pk, q2_weights& w) {
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    w.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0f)));
    // Lane k, bytes 4c..4c+3: 0, 1, 2, 3 times the scale of group 4c + k (a dword scale times 0x03020100).
    const __m512i table = _mm512_mullo_epi32(
        _mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_and_si128(sc, _mm_set1_epi8(0x0f)), pk.lane_order)),
        _mm512_set1_epi32(0x03020100));
    for (int c = 0; c < 4; ++c) {
        const __m512i half =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * (c / 2))));
        // (bits >> shift) & 3 | 4c: the value's index into its lane's row of the table.
        const __m512i idx = _mm512_ternarylogic_epi32(_mm512_srlv_epi16(half, pk.shift[c % 2]), _mm512_set1_epi8(3),
                                                      pk.offset[c], 0xea);
        w.v[c] = _mm512_shuffle_epi8(table, idx);
    }
    std::uint32_t dd;
    std::memcpy(&dd, &x.d, sizeof dd);
    w.d = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd)));
}

// One super-block of one token added to its accumulators; dot_q2_k and dot4_q2_k share it.
inline void step(const q2_weights& w, const block_q8_k& y, __m512& acc, __m256& acc_m) {
    __m512i sumi = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
        sumi = _mm512_dpbusd_epi32(sumi, w.v[c], _mm512_loadu_si512(y.qs + 64 * c));
    }
    const __m256i mins = _mm256_madd_epi16(w.mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
    const __m128 scale = _mm_mul_ps(_mm_set1_ps(y.d), w.d); // y.d * d, y.d * dmin
    acc = _mm512_fmadd_ps(_mm512_broadcastss_ps(scale), _mm512_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(scale)), _mm256_cvtepi32_ps(mins), acc_m);
}

inline float finish(__m512 acc, __m256 acc_m) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(acc_m), _mm256_extractf128_ps(acc_m, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return _mm512_reduce_add_ps(acc) - _mm_cvtss_f32(m);
}

} // namespace

float dot_q2_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q2_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const picks pk;
    __m512 acc = _mm512_setzero_ps();
    __m256 acc_m = _mm256_setzero_ps();
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], pk, qw);
        step(qw, y[b], acc, acc_m);
    }
    return finish(acc, acc_m);
}

void dot4_q2_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q2_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const picks pk;
    __m512 acc[4];
    __m256 acc_m[4];
    for (int t = 0; t < 4; ++t) {
        acc[t] = _mm512_setzero_ps();
        acc_m[t] = _mm256_setzero_ps();
    }
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], pk, qw);
        for (int t = 0; t < 4; ++t) {
            step(qw, y[t][b], acc[t], acc_m[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = finish(acc[t], acc_m[t]);
    }
}

} // namespace sluice::kernels::avx512
