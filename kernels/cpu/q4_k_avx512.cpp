// AVX-512 (BW + VNNI) kernels for Q4_K weights against Q8_K activations.
//
// Super-blocks go in pairs: the two 12-byte scale fields are unpacked together in registers (one per 128-bit
// lane) and the two minimum terms are one 512-bit multiply-add, which halves the per-super-block bookkeeping
// that dominated this kernel (docs/PERFORMANCE.md, "Q4_K: what its kernel spends"). Each 32-byte nibble run is
// broadcast to both halves of a register and its high nibbles shifted down in the upper half only, so values
// 64c..64c+63 line up with 64 contiguous activation bytes.
#include "kernels/cpu/k_pairs_avx512.hpp"
#include "kernels/cpu/simd_kernels.hpp"

namespace sluice::kernels::avx512 {

// The float steps are the scalar reference's, one per super-block: y.d * (d * S - dmin * M) added to one running
// sum, with S and M the block's exact integer sums. So these kernels, the 4-token one and the 16-row interleaved
// kernel (q4_k_x16_avx512.cpp) all give the scalar reference's result bit for bit.

namespace {

// S0, S1 (the 16 lanes of s0 and of s1 summed) and M0, M1 (lanes 0-7 and 8-15 of `mins`), converted to float.
inline void pair_totals(__m512i s0, __m512i s1, __m512i mins, float* out) {
    const __m512i w = _mm512_add_epi32(_mm512_shuffle_i64x2(s0, s1, 0x44), _mm512_shuffle_i64x2(s0, s1, 0xee));
    __m512i z = _mm512_add_epi32(_mm512_shuffle_i64x2(w, mins, 0x88), _mm512_shuffle_i64x2(w, mins, 0xdd));
    z = _mm512_add_epi32(z, _mm512_shuffle_epi32(z, _MM_PERM_BADC));
    z = _mm512_add_epi32(z, _mm512_shuffle_epi32(z, _MM_PERM_CDAB));
    const __m512 f = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                                           _mm512_cvtepi32_ps(z));
    _mm_storeu_ps(out, _mm512_castps512_ps128(f));
}

// One super-block's term, exactly as the scalar reference computes it.
inline float block_term(float yd, const block_q4_k& x, float s, float m) {
    return yd * (half(x.d) * s - half(x.dmin) * m);
}

// Integer totals of super-blocks a and b (any two, of one row or of two) against activation blocks ya and yb:
// t = {S_a, S_b, M_a, M_b}.
inline void pair_sums(const block_q4_k& a, const block_q4_k& b, const block_q8_k& ya, const block_q8_k& yb,
                      const pair_indices& ix, float* t) {
    const __m512i words = pair_words(a, b);
    const __m512i mins = pair_mins(words, ix, bsums(ya), bsums(yb));
    const __m512i q0[4] = {nibble_chunk(a.qs, 0), nibble_chunk(a.qs, 1), nibble_chunk(a.qs, 2), nibble_chunk(a.qs, 3)};
    const __m512i q1[4] = {nibble_chunk(b.qs, 0), nibble_chunk(b.qs, 1), nibble_chunk(b.qs, 2), nibble_chunk(b.qs, 3)};
    pair_totals(block_sumi(q0, words, ix.idx, ya.qs), block_sumi(q1, words, ix.idx + 4, yb.qs), mins, t);
}

} // namespace

// Blocks b and b+1 share their bookkeeping; a lone last block is paired with itself and its twin's sums are
// dropped.
float dot_q4_k(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const auto* y = static_cast<const block_q8_k*>(act);
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    float sum = 0.0f;
    for (std::size_t b = 0; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        const std::size_t b1 = pair ? b + 1 : b;
        const __m512i words = pair_words(x[b], x[b1]);
        const __m512i mins = pair_mins(words, ix, bsums(y[b]), bsums(y[b1]));
        const __m512i q0[4] = {nibble_chunk(x[b].qs, 0), nibble_chunk(x[b].qs, 1), nibble_chunk(x[b].qs, 2),
                               nibble_chunk(x[b].qs, 3)};
        const __m512i q1[4] = {nibble_chunk(x[b1].qs, 0), nibble_chunk(x[b1].qs, 1), nibble_chunk(x[b1].qs, 2),
                               nibble_chunk(x[b1].qs, 3)};
        const __m512i s0 = block_sumi(q0, words, ix.idx, y[b].qs);
        const __m512i s1 = block_sumi(q1, words, ix.idx + 4, y[b1].qs);
        alignas(16) float t[4];
        pair_totals(s0, s1, mins, t);
        sum += block_term(y[b].d, x[b], t[0], t[2]);
        if (pair) {
            sum += block_term(y[b1].d, x[b1], t[1], t[3]);
        }
    }
    return sum;
}

namespace {

// T tokens (2 to 4) against one weight row: the weight side (scale words, both blocks' nibbles) is unpacked once
// per block pair for all of them; each token's sum takes the single-token kernel's steps in its order.
template <int T>
void dot_tokens_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_q4_k*>(w);
    const block_q8_k* y[T];
    for (int t = 0; t < T; ++t) {
        y[t] = reinterpret_cast<const block_q8_k*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    float sum[T] = {};
    for (std::size_t b = 0; b < nb; b += 2) {
        const bool pair = b + 1 < nb;
        const std::size_t b1 = pair ? b + 1 : b;
        const __m512i words = pair_words(x[b], x[b1]);
        const __m512i q0[4] = {nibble_chunk(x[b].qs, 0), nibble_chunk(x[b].qs, 1), nibble_chunk(x[b].qs, 2),
                               nibble_chunk(x[b].qs, 3)};
        const __m512i q1[4] = {nibble_chunk(x[b1].qs, 0), nibble_chunk(x[b1].qs, 1), nibble_chunk(x[b1].qs, 2),
                               nibble_chunk(x[b1].qs, 3)};
        for (int t = 0; t < T; ++t) {
            const block_q8_k* yt = y[t];
            const __m512i mins = pair_mins(words, ix, bsums(yt[b]), bsums(yt[b1]));
            const __m512i s0 = block_sumi(q0, words, ix.idx, yt[b].qs);
            const __m512i s1 = block_sumi(q1, words, ix.idx + 4, yt[b1].qs);
            alignas(16) float tot[4];
            pair_totals(s0, s1, mins, tot);
            sum[t] += block_term(yt[b].d, x[b], tot[0], tot[2]);
            if (pair) {
                sum[t] += block_term(yt[b1].d, x[b1], tot[1], tot[3]);
            }
        }
    }
    for (int t = 0; t < T; ++t) {
        out[t] = sum[t];
    }
}

} // namespace

void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    dot_tokens_q4_k<4>(n, w, act, act_stride, out);
}

void dot_few_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, std::size_t n_tokens,
                  float* out) {
    if (n_tokens == 3) {
        dot_tokens_q4_k<3>(n, w, act, act_stride, out);
    } else {
        dot_tokens_q4_k<2>(n, w, act, act_stride, out);
    }
}

// Rows two at a time: each row's whole block pairs as in dot_q4_k, and with an odd block count the two rows' last
// blocks make one pair instead of each being paired with itself (the expert down projection of Qwen3-30B-A3B has 3
// blocks per row, so a quarter of dot_q4_k's work there was the lone block's twin: 768 x 2048 decode went from 10.5
// to 15.1 GB/s on one core). The two rows' pairs are not interleaved: that needs twice the vector registers and ran
// at a third of the speed. Each row's terms are added in block order as in dot_q4_k, so out[r] equals dot_q4_k of
// row r bit for bit.
void dot_rows_q4_k(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                   float* out) {
    const auto* y = static_cast<const block_q8_k*>(act);
    const std::size_t nb = n / qk_k;
    const pair_indices ix;
    std::size_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const auto* x0 = reinterpret_cast<const block_q4_k*>(static_cast<const std::uint8_t*>(w) + r * w_stride);
        const auto* x1 = reinterpret_cast<const block_q4_k*>(static_cast<const std::uint8_t*>(w) + (r + 1) * w_stride);
        float sum0 = 0.0f, sum1 = 0.0f;
        std::size_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            alignas(16) float t[4];
            pair_sums(x0[b], x0[b + 1], y[b], y[b + 1], ix, t);
            sum0 += block_term(y[b].d, x0[b], t[0], t[2]);
            sum0 += block_term(y[b + 1].d, x0[b + 1], t[1], t[3]);
        }
        for (std::size_t c = 0; c < b; c += 2) {
            alignas(16) float t[4];
            pair_sums(x1[c], x1[c + 1], y[c], y[c + 1], ix, t);
            sum1 += block_term(y[c].d, x1[c], t[0], t[2]);
            sum1 += block_term(y[c + 1].d, x1[c + 1], t[1], t[3]);
        }
        if (b < nb) {
            alignas(16) float t[4];
            pair_sums(x0[b], x1[b], y[b], y[b], ix, t);
            sum0 += block_term(y[b].d, x0[b], t[0], t[2]);
            sum1 += block_term(y[b].d, x1[b], t[1], t[3]);
        }
        out[r] = sum0;
        out[r + 1] = sum1;
    }
    if (r < n_rows) {
        out[r] = dot_q4_k(n, static_cast<const std::uint8_t*>(w) + r * w_stride, act);
    }
}

} // namespace sluice::kernels::avx512
