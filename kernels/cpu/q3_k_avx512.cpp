// AVX-512 (BW + VNNI) kernels for Q3_K weights against Q8_K activations: the layout of Q2_K's 512-bit kernel, with
// the hmask bit of each value added as 4 under a byte mask (values taken as q + 4, the bias taken off with the
// activation block sums) and signed scales.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// Per shift s: the word permute of the scales (as Q2_K's) and the hmask bit of runs s (low half) and 4 + s (high).
struct picks {
    __m512i idx[4];
    __m512i bit[4];
    picks() {
        for (int s = 0; s < 4; ++s) {
            const auto g = static_cast<short>(2 * s);
            idx[s] =
                join(_mm256_setr_epi16(g, g, g, g, g, g, g, g, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1, g + 1),
                     _mm256_setr_epi16(g + 8, g + 8, g + 8, g + 8, g + 8, g + 8, g + 8, g + 8, g + 9, g + 9, g + 9,
                                       g + 9, g + 9, g + 9, g + 9, g + 9));
            bit[s] = join(_mm256_set1_epi8(static_cast<char>(1 << s)), _mm256_set1_epi8(static_cast<char>(16 << s)));
        }
    }
};

// The weight side of one super-block, unpacked once and shared by every token.
struct q3_weights {
    __m512i u[4];     // shift s: runs s and 4 + s as q + 4
    __m512i scale[4]; // shift s: the matching group scales as signed words
    __m256i scales;   // the 16 scales as words
    float d;
};

inline void unpack(const block_q3_k& x, const picks& pk, q3_weights& w) {
    alignas(16) std::int8_t sc[16];
    unpack_q3_k_scales(x.scales, sc);
    w.scales = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
    const __m512i words = _mm512_castsi256_si512(w.scales);
    const __m512i raw = _mm512_loadu_si512(x.qs);
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.hmask)));
    for (int s = 0; s < 4; ++s) {
        const __m512i low = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * s), _mm512_set1_epi8(3));
        w.u[s] = _mm512_mask_add_epi8(low, _mm512_test_epi8_mask(hm, pk.bit[s]), low, _mm512_set1_epi8(4));
        w.scale[s] = _mm512_permutexvar_epi16(pk.idx[s], words);
    }
    w.d = half(x.d);
}

// One super-block of one token added to its accumulator; dot_q3_k and dot4_q3_k share it.
inline void step(const q3_weights& w, const block_q8_k& y, __m512& acc) {
    __m512i sumi = _mm512_setzero_si512();
    for (int s = 0; s < 4; ++s) {
        const __m512i p = _mm512_maddubs_epi16(w.u[s], load_2x32(y.qs + 32 * s, y.qs + 128 + 32 * s));
        sumi = _mm512_dpwssd_epi32(sumi, p, w.scale[s]);
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
