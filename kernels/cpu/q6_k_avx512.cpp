// AVX-512 (BW + VNNI) kernels for Q6_K weights against Q8_K activations: 64 values per 512-bit step, and a
// 4-token variant for prefill that unpacks each weight block once.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// One super-block unpacked: the four 64-value vectors of 6-bit values (stored +32) and their scales.
struct q6_unpacked {
    __m256i sc16;  // the 16 int8 scales widened to int16
    __m512i q[4];  // values 0-63, 64-127, 128-191, 192-255
    __m512i s[4];  // int16 scale of each int16 product lane of the matching q
};

inline q6_unpacked unpack(const block_q6_k& x) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i m2 = _mm512_set1_epi8(0x03);
    // Lane i of a 32 x int16 vector belongs to group i/8 of the four 16-value groups in 64 values.
    const __m512i group_of_lane = _mm512_srli_epi16(
        _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7,
                         6, 5, 4, 3, 2, 1, 0),
        3);
    q6_unpacked u;
    u.sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
    const __m512i scales = _mm512_castsi256_si512(u.sc16);
    for (int h = 0; h < 2; ++h) {
        const __m512i l = _mm512_loadu_si512(x.ql + 64 * h);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh + 32 * h));
        const __m512i h01 = join(qh, _mm256_srli_epi16(qh, 2));
        const __m512i h23 = _mm512_srli_epi16(h01, 4);
        u.q[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(h01, m2), 4));
        u.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                         _mm512_slli_epi16(_mm512_and_si512(h23, m2), 4));
        u.s[2 * h] = _mm512_permutexvar_epi16(_mm512_add_epi16(group_of_lane, _mm512_set1_epi16(8 * h)), scales);
        u.s[2 * h + 1] = _mm512_permutexvar_epi16(_mm512_add_epi16(group_of_lane, _mm512_set1_epi16(8 * h + 4)), scales);
    }
    return u;
}

// Integer dot of one unpacked super-block with one activation block, the +32 storage offset removed.
inline __m512i block_sum(const q6_unpacked& u, const block_q8_k& y) {
    // Start from -32 * sum_g scale[g] * bsum[g].
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
    const __m256i offset = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(u.sc16, bs)), 5);
    __m512i sumi = _mm512_zextsi256_si512(offset);
    for (int k = 0; k < 4; ++k) {
        sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(u.q[k], _mm512_loadu_si512(y.qs + 64 * k)), u.s[k]);
    }
    return sumi;
}

} // namespace

float dot_q6_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q6_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    __m512 acc = _mm512_setzero_ps();
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const __m512i sumi = block_sum(unpack(x[b]), y[b]);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(y[b].d * half(x[b].d)), _mm512_cvtepi32_ps(sumi), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

void dot4_q6_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q6_k*>(w);
    const block_q8_k* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    // Same steps per token as dot_q6_k, so results are bit-identical; the weights unpack once.
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (std::size_t b = 0; b < n / qk_k; ++b) {
        const q6_unpacked u = unpack(x[b]);
        const float dx = half(x[b].d);
        for (int t = 0; t < 4; ++t) {
            const __m512i sumi = block_sum(u, y[t][b]);
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y[t][b].d * dx), _mm512_cvtepi32_ps(sumi), acc[t]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(acc[t]);
    }
}

} // namespace sluice::kernels::avx512
