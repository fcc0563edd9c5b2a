// AVX-512 (BW + VNNI) kernel for Q8_0 weights against Q8_0 activations, two blocks per 512-bit step.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <algorithm>

namespace sluice::kernels::avx512 {

namespace {

// Blocks b and b + 1's quants (`pair`), or block b's alone with the upper 256 bits zero.
inline __m512i load_tail(const block_q8_0* blocks, std::size_t b, bool pair) {
    return pair ? load_2x32(blocks[b].qs, blocks[b + 1].qs)
                : _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs)));
}

// The sum of v's 16 lanes by a fixed tree (halves, then quarters, then pairs), the one reduce16x16 applies to
// sixteen vectors at once, so that a row's dot is bit-identical whether it is reduced alone or with others.
inline float reduce16(__m512 v) {
    const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

// reduce16 of each of v[0..15] into lane r of the result (the same additions, on transposed lanes): one
// reduction for sixteen rows instead of sixteen, the largest cost of a dot over a short row.
inline __m512 reduce16x16(const __m512* v) {
    __m512 s[8], t[4], u[2];
    for (int j = 0; j < 8; ++j) { // lanes 0..7: row 2j's halves added; 8..15: row 2j + 1's
        s[j] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    for (int j = 0; j < 4; ++j) { // each 128-bit lane: one row's quarters added
        t[j] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * j], s[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(s[2 * j], s[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    for (int j = 0; j < 2; ++j) { // each 128-bit lane: two rows' pairs of partial sums
        u[j] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * j], t[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(t[2 * j], t[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    const __m512 w = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    // Lane 4a + b of w holds row 4b + a.
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, w);
}

// Weight row x against prepared activations y over nb blocks: the 16 lane sums before the final reduction.
// Weights are biased to unsigned (w ^ 0x80 = w + 128) for dpbusd, and the bias is removed by starting each sum at
// -128 * sum(y). The float steps match dot4_q8_0, so both give bit-identical results.
inline __m512 row_sums(std::size_t nb, const block_q8_0* x, const block_q8_0* y) {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::size_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        for (int h = 0; h < 2; ++h) {
            const std::size_t p = b + 2 * h;
            const __m512i yv = load_2x32(y[p].qs, y[p + 1].qs);
            const __m512i unbias =
                _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, yv));
            const __m512i wu = _mm512_xor_si512(load_2x32(x[p].qs, x[p + 1].qs), bias);
            const __m512i prod = _mm512_dpbusd_epi32(unbias, wu, yv);
            const __m512 d = join_ps(half(x[p].d) * half(y[p].d), half(x[p + 1].d) * half(y[p + 1].d));
            acc[h] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(prod), acc[h]);
        }
    }
    // The last one to three blocks in steps of two (the upper half zero for a lone block), into acc[0]: rows of
    // 96 or 160 columns (small experts' down projections) would otherwise run whole in scalar code.
    for (; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        const __m512i yv = load_tail(y, b, pair);
        const __m512i unbias =
            _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, yv));
        const __m512i wu = _mm512_xor_si512(load_tail(x, b, pair), bias);
        const __m512i prod = _mm512_dpbusd_epi32(unbias, wu, yv);
        const __m512 d = join_ps(half(x[b].d) * half(y[b].d), pair ? half(x[b + 1].d) * half(y[b + 1].d) : 0.0f);
        acc[0] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(prod), acc[0]);
    }
    return _mm512_add_ps(acc[0], acc[1]);
}

} // namespace

float dot_q8_0(std::size_t n, const void* w, const void* act) {
    return reduce16(row_sums(n / qk32, static_cast<const block_q8_0*>(w), static_cast<const block_q8_0*>(act)));
}

// Rows one after another (one sequential weight stream, as dot_q8_0 row by row), their lane sums reduced sixteen
// rows at a time.
void dot_rows_q8_0(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                   float* out) {
    const auto* wb = static_cast<const std::uint8_t*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    __m512 sums[16];
    for (std::size_t r0 = 0; r0 < n_rows; r0 += 16) {
        const std::size_t m = std::min<std::size_t>(16, n_rows - r0);
        for (std::size_t r = 0; r < 16; ++r) {
            sums[r] = r < m ? row_sums(nb, reinterpret_cast<const block_q8_0*>(wb + (r0 + r) * w_stride), y)
                            : _mm512_setzero_ps();
        }
        _mm512_mask_storeu_ps(out + r0, static_cast<__mmask16>((1u << m) - 1), reduce16x16(sums));
    }
}

namespace {

// Weight row x against four tokens' prepared activations y[0..3] over nb blocks: each token's 16 lane sums into
// sums[t] before the final reduction.
inline void row_sums4(std::size_t nb, const block_q8_0* x, const block_q8_0* const* y, __m512* sums) {
    // Same block steps and accumulators as dot_q8_0, so each result is bit-identical to it.
    __m512 acc[4][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm512_setzero_ps();
    }
    std::size_t b = 0;
    // idx[t]: lanes 0..7 take scale product 2t (block p), lanes 8..15 take 2t+1 (block p+1).
    __m512i idx[4];
    for (int t = 0; t < 4; ++t) {
        idx[t] = join(_mm256_set1_epi32(2 * t), _mm256_set1_epi32(2 * t + 1));
    }
    for (; b + 4 <= nb; b += 4) {
        for (int h = 0; h < 2; ++h) {
            // Weight side once per block pair: |w|, its sign mask and the scales.
            const std::size_t p = b + 2 * h;
            const __m512i wv = load_2x32(x[p].qs, x[p + 1].qs);
            const __mmask64 neg = _mm512_movepi8_mask(wv);
            const __m512i wabs = _mm512_abs_epi8(wv);
            // All eight activation scales (4 tokens x 2 blocks) converted and multiplied at once.
            const __m128i yh = _mm_setr_epi16(static_cast<short>(y[0][p].d), static_cast<short>(y[0][p + 1].d),
                                              static_cast<short>(y[1][p].d), static_cast<short>(y[1][p + 1].d),
                                              static_cast<short>(y[2][p].d), static_cast<short>(y[2][p + 1].d),
                                              static_cast<short>(y[3][p].d), static_cast<short>(y[3][p + 1].d));
            const __m128i xh =
                _mm_set1_epi32(static_cast<int>(x[p].d | (static_cast<std::uint32_t>(x[p + 1].d) << 16)));
            const __m512 dxy = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_cvtph_ps(xh), _mm256_cvtph_ps(yh)));
            for (int t = 0; t < 4; ++t) {
                const __m512i yv = load_2x32(y[t][p].qs, y[t][p + 1].qs);
                const __m512i ys = _mm512_mask_sub_epi8(yv, neg, _mm512_setzero_si512(), yv);
                const __m512i prod = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wabs, ys);
                const __m512 d = _mm512_permutexvar_ps(idx[t], dxy);
                acc[t][h] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(prod), acc[t][h]);
            }
        }
    }
    // The tail as in dot_q8_0: pairs of blocks (a lone block's upper half zero) into acc[t][0].
    for (; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        const __m512i wv = load_tail(x, b, pair);
        const __mmask64 neg = _mm512_movepi8_mask(wv);
        const __m512i wabs = _mm512_abs_epi8(wv);
        for (int t = 0; t < 4; ++t) {
            const __m512i yv = load_tail(y[t], b, pair);
            const __m512i ys = _mm512_mask_sub_epi8(yv, neg, _mm512_setzero_si512(), yv);
            const __m512i prod = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wabs, ys);
            const __m512 d =
                join_ps(half(x[b].d) * half(y[t][b].d), pair ? half(x[b + 1].d) * half(y[t][b + 1].d) : 0.0f);
            acc[t][0] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(prod), acc[t][0]);
        }
    }
    for (int t = 0; t < 4; ++t) {
        sums[t] = _mm512_add_ps(acc[t][0], acc[t][1]);
    }
}

// The four tokens' activation rows, act + t * act_stride.
inline void token_rows(const void* act, std::size_t act_stride, const block_q8_0** y) {
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
}

} // namespace

void dot4_q8_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const block_q8_0* y[4];
    token_rows(act, act_stride, y);
    __m512 sums[4];
    row_sums4(n / qk32, static_cast<const block_q8_0*>(w), y, sums);
    for (int t = 0; t < 4; ++t) {
        out[t] = reduce16(sums[t]);
    }
}

// Four rows at a time, each against the four tokens as in dot4_q8_0: the sixteen (row, token) lane sums reduced
// together.
void dot4_rows_q8_0(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                    std::size_t act_stride, float* out, std::size_t out_stride) {
    const auto* wb = static_cast<const std::uint8_t*>(w);
    const block_q8_0* y[4];
    token_rows(act, act_stride, y);
    const std::size_t nb = n / qk32;
    __m512 sums[16];
    alignas(64) float lanes[16];
    for (std::size_t r0 = 0; r0 < n_rows; r0 += 4) {
        const std::size_t m = std::min<std::size_t>(4, n_rows - r0);
        for (std::size_t r = 0; r < 4; ++r) { // lane 4r + t: row r0 + r, token t
            if (r < m) {
                row_sums4(nb, reinterpret_cast<const block_q8_0*>(wb + (r0 + r) * w_stride), y, sums + 4 * r);
            } else {
                sums[4 * r] = sums[4 * r + 1] = sums[4 * r + 2] = sums[4 * r + 3] = _mm512_setzero_ps();
            }
        }
        _mm512_store_ps(lanes, reduce16x16(sums));
        for (std::size_t r = 0; r < m; ++r) {
            for (std::size_t t = 0; t < 4; ++t) {
                out[t * out_stride + r0 + r] = lanes[4 * r + t];
            }
        }
    }
}

} // namespace sluice::kernels::avx512
