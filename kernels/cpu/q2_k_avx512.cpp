// AVX-512 (BW + VNNI) kernels for Q2_K weights against Q8_K activations. The 64 bytes of 2-bit values are one
// register: shift s gives run s (values 32s..32s+31) in the low half and run 4 + s in the high half, which meet
// the activation bytes at 32s and 128 + 32s; each 16-value group's scale is a word broadcast by one permute.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Word permutes of the 16 scales for shift s: words 0-7 group 2s, 8-15 group 2s+1, 16-23 group 8+2s, 24-31 9+2s.
struct scale_picks {
    __m512i idx[4];
    scale_picks() {
        for (int s = 0; s < 4; ++s) {
            const auto g = static_cast<short>(2 * s);
            idx[s] =
                join(_mm256_setr_epi16(g, g, g, g, g, g, g, g, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1),
                     _mm256_setr_epi16(g + 8, g + 8, g + 8, g + 8, g + 8, g + 8, g + 8, g + 8, g + 9, g + 9, g + 9,
                                       g + 9, g + 9, g + 9, g + 9, g + 9));
        }
    }
};

// The weight side of one super-block, unpacked once and shared by every token.
struct q2_weights {
    __m512i v[4];     // shift s: runs s and 4 + s, values 0..3
    __m512i scale[4]; // shift s: the matching group scales as words
    __m256i mins;     // the 16 minimums as words
    float d, dmin;
};

inline void unpack(const block_q2_k& x, const scale_picks& sp, q2_weights& w) {
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    const __m512i words = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sc, _mm_set1_epi8(0x0f))));
    w.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0f)));
    const __m512i raw = _mm512_loadu_si512(x.qs);
    for (int s = 0; s < 4; ++s) {
        w.v[s] = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * s), _mm512_set1_epi8(3));
        w.scale[s] = _mm512_permutexvar_epi16(sp.idx[s], words);
    }
    w.d = half(x.d);
    w.dmin = half(x.dmin);
}

// One super-block of one token added to its accumulators; dot_q2_k and dot4_q2_k share it.
inline void step(const q2_weights& w, const block_q8_k& y, __m512& acc, __m256& acc_m) {
    __m512i sumi = _mm512_setzero_si512();
    for (int s = 0; s < 4; ++s) {
        const __m512i p = _mm512_maddubs_epi16(w.v[s], load_2x32(y.qs + 32 * s, y.qs + 128 + 32 * s));
        sumi = _mm512_dpwssd_epi32(sumi, p, w.scale[s]);
    }
    const __m256i mins = _mm256_madd_epi16(w.mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
    acc = _mm512_fmadd_ps(_mm512_set1_ps(y.d * w.d), _mm512_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_set1_ps(y.d * w.dmin), _mm256_cvtepi32_ps(mins), acc_m);
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
    const scale_picks sp;
    __m512 acc = _mm512_setzero_ps();
    __m256 acc_m = _mm256_setzero_ps();
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], sp, qw);
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
    const scale_picks sp;
    __m512 acc[4];
    __m256 acc_m[4];
    for (int t = 0; t < 4; ++t) {
        acc[t] = _mm512_setzero_ps();
        acc_m[t] = _mm256_setzero_ps();
    }
    q2_weights qw;
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        unpack(x[b], sp, qw);
        for (int t = 0; t < 4; ++t) {
            step(qw, y[t][b], acc[t], acc_m[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = finish(acc[t], acc_m[t]);
    }
}

} // namespace sluice::kernels::avx512
