// AVX-512 (VNNI) products of q4_k_x16 weights (sixteen interleaved Q4_K rows, kernels/cpu/q4_k_x16.hpp) with Q8_K
// activations. Each 32-bit lane is one row: a 64-byte weight load holds four consecutive values of each of the
// sixteen rows (two such runs, in its low and high nibbles), and one `dpbusd` against four activation bytes
// broadcast from memory adds four products to every row. The weight side (nibbles, scales) is unpacked once per
// block for up to four tokens. Integer sums are exact; the float steps per super-block are the scalar
// reference's (y.d * (d * S - dmin * M) added to a running sum), lane by lane, so results equal dot_q4_k's.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/q4_k_x16.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <algorithm>
#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

inline __m512i broadcast_i32(const void* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

// One group against T activation rows (y[t] the first block of row t); writes 16 results per token.
template <int T>
void group_tokens(std::size_t nb, const block_q4_k_x16* x, const block_q8_k* const* y, float* const* out,
                  std::size_t col) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i bits45 = _mm512_set1_epi8(0x30);
    __m512 sum[T];
    for (int t = 0; t < T; ++t) {
        sum[t] = _mm512_setzero_ps();
    }
    alignas(64) std::uint8_t sm[256]; // scales of groups 0..7 (16 bytes each), then mins
    for (std::size_t b = 0; b < nb; ++b) {
        const block_q4_k_x16& g = x[b];
        // Scales and mins of the 16 rows as bytes, one 16-byte run per group of 32 values.
        const __m512i lo0 = _mm512_loadu_si512(g.scales_lo);
        const __m512i lo1 = _mm512_loadu_si512(g.scales_lo + 64);
        const __m512i hi = _mm512_loadu_si512(g.scales_hi);
        _mm512_store_si512(
            sm, _mm512_or_si512(_mm512_and_si512(lo0, low4), _mm512_and_si512(_mm512_slli_epi16(hi, 4), bits45)));
        _mm512_store_si512(sm + 64, _mm512_or_si512(_mm512_and_si512(lo1, low4), _mm512_and_si512(hi, bits45)));
        _mm512_store_si512(sm + 128, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo0, 4), low4),
                                                     _mm512_and_si512(_mm512_slli_epi16(hi, 2), bits45)));
        _mm512_store_si512(sm + 192, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo1, 4), low4),
                                                     _mm512_and_si512(_mm512_srli_epi16(hi, 2), bits45)));
        __m512i S[T], M[T];
        for (int t = 0; t < T; ++t) {
            S[t] = M[t] = _mm512_setzero_si512();
        }
        for (int s = 0; s < 8; ++s) {
            const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sm + 16 * s)));
            const __m512i mn =
                _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sm + 128 + 16 * s)));
            const __m512i mn2 = _mm512_or_si512(mn, _mm512_slli_epi32(mn, 16)); // the min in both 16-bit halves
            __m512i q[8];
            for (int p = 0; p < 4; ++p) {
                const __m512i raw = _mm512_loadu_si512(g.qs + 64 * (4 * s + p));
                q[2 * p] = _mm512_and_si512(raw, low4);
                q[2 * p + 1] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
            }
            for (int t = 0; t < T; ++t) {
                const block_q8_k& yb = y[t][b];
                const std::int8_t* a = yb.qs + 32 * s;
                __m512i isum = _mm512_setzero_si512();
                for (int j = 0; j < 8; ++j) {
                    isum = _mm512_dpbusd_epi32(isum, q[j], broadcast_i32(a + 4 * j));
                }
                S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(isum, sc));
                // The min times both 16-value activation sums of this group of 32.
                M[t] = _mm512_dpwssd_epi32(M[t], mn2, broadcast_i32(yb.bsums + 2 * s));
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.d)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.dmin)));
        for (int t = 0; t < T; ++t) {
            const __m512 diff = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(S[t])),
                                              _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(M[t])));
            sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_set1_ps(y[t][b].d), diff));
        }
    }
    for (int t = 0; t < T; ++t) {
        _mm512_storeu_ps(out[t] + col, sum[t]);
    }
}

constexpr std::size_t token_tile = 32; // activation rows kept in L2 while every group passes over them

} // namespace

void matmul_q4_k_x16(std::size_t cols, const void* w, std::size_t n_groups, const void* act, std::size_t act_stride,
                     std::size_t n_tokens, float* const* out) {
    const std::size_t nb = cols / qk_k;
    const auto* groups = static_cast<const block_q4_k_x16*>(w);
    const auto* ab = static_cast<const std::uint8_t*>(act);
    for (std::size_t t0 = 0; t0 < n_tokens; t0 += token_tile) {
        const std::size_t t1 = std::min(n_tokens, t0 + token_tile);
        for (std::size_t gi = 0; gi < n_groups; ++gi) {
            const block_q4_k_x16* x = groups + gi * nb;
            for (std::size_t t = t0; t < t1; t += 4) {
                const block_q8_k* y[4];
                const std::size_t n = std::min<std::size_t>(4, t1 - t);
                for (std::size_t i = 0; i < n; ++i) {
                    y[i] = reinterpret_cast<const block_q8_k*>(ab + (t + i) * act_stride);
                }
                switch (n) {
                case 4:
                    group_tokens<4>(nb, x, y, out + t, 16 * gi);
                    break;
                case 3:
                    group_tokens<3>(nb, x, y, out + t, 16 * gi);
                    break;
                case 2:
                    group_tokens<2>(nb, x, y, out + t, 16 * gi);
                    break;
                default:
                    group_tokens<1>(nb, x, y, out + t, 16 * gi);
                    break;
                }
            }
        }
    }
}

} // namespace sluice::kernels::avx512
