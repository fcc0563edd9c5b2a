// AVX-512 (BW + VNNI) kernels for MXFP4 weights against Q8_0 activations: two blocks per 512-bit step, the FP4
// levels looked up with one byte shuffle (stored +128 so dpbusd takes them unsigned), as IQ4_NL does. The float
// scale of each block, 2^(e - 128) times the activation's f16 scale, is formed sixteen blocks at a time: the scale
// fields are collected in general registers (scalar loads and shifts, off the vector pipes), moved over in a few
// inserts and converted together (vscalefps applies the power of two exactly, as the scalar product does); each
// pair of blocks then takes its two products with one permute.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

#include <vector>

namespace sluice::kernels::avx512 {
namespace {

constexpr std::size_t group_blocks = 16; // blocks whose scales are formed together

// The 16 doubled levels + 128 in every 128-bit lane.
inline __m512i biased_levels() {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mxfp4_levels));
    return _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
}

// The values of blocks x0 and x1 (biased), shared by every token.
inline __m512i pair_values(const block_mxfp4& x0, const block_mxfp4& x1, __m512i table) {
    return _mm512_shuffle_epi8(table, nibbles_2x16(x0.qs, x1.qs));
}

// Integer sums of a pair against its activations: 16 int32, block b in lanes 0..7 and c in 8..15.
inline __m512i pair_sums(__m512i q, const block_q8_0& yb, const block_q8_0& yc) {
    return dot_biased(q, load_2x32(yb.qs, yc.qs), _mm512_set1_epi8(static_cast<char>(0x80)));
}

// A field loaded into a general register; the empty asm keeps the compiler from gathering the fields with vector
// inserts, which would compete with the products for the shuffle pipes.
inline std::uint64_t scalar_field(std::uint64_t v) {
    asm("" : "+r"(v));
    return v;
}

// The scale exponents e - 128 of 16 blocks as floats, for vscalefps: dy * 2^(e - 128) is rounded once, as the
// product with the exact power of two (a subnormal one for e < 2) is.
inline __m512 scale_exponents16(const block_mxfp4* x) {
    std::uint64_t e[2] = {0, 0};
    for (std::size_t i = 0; i < group_blocks; ++i) {
        e[i / 8] |= scalar_field(x[i].e) << (8 * (i % 8));
    }
    const __m128i eb =
        _mm_insert_epi64(_mm_cvtsi64_si128(static_cast<long long>(e[0])), static_cast<long long>(e[1]), 1);
    return _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(eb)), _mm512_set1_ps(128.0f));
}

// Lane i: e8m0_to_f32_half(x[i].e) * half(y[i].d) for 16 blocks, the same floats as the scalar products.
inline __m512 scale_products16(const block_mxfp4* x, const block_q8_0* y) {
    std::uint64_t d[4] = {0, 0, 0, 0};
    for (std::size_t i = 0; i < group_blocks; ++i) {
        d[i / 4] |= scalar_field(y[i].d) << (16 * (i % 4));
    }
    const __m128i d_lo =
        _mm_insert_epi64(_mm_cvtsi64_si128(static_cast<long long>(d[0])), static_cast<long long>(d[1]), 1);
    const __m128i d_hi =
        _mm_insert_epi64(_mm_cvtsi64_si128(static_cast<long long>(d[2])), static_cast<long long>(d[3]), 1);
    const __m512 dy = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(d_lo), d_hi, 1));
    return _mm512_scalef_ps(dy, scale_exponents16(x));
}

// Pair p of a group: lanes 0..7 take product 2p, lanes 8..15 product 2p + 1.
inline __m512i pair_pick(int p) {
    return join(_mm256_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1));
}

// Blocks b and c of one token added to `acc` with scalar scales (c == b for a lone last block, whose twin gets
// scale 0): the blocks of a row past its whole groups.
inline __m512 pair_step(__m512 acc, __m512i q, float dx0, float dx1, const block_q8_0* y, std::size_t b,
                        std::size_t c) {
    const __m512 d = join_ps(dx0 * half(y[b].d), c != b ? dx1 * half(y[c].d) : 0.0f);
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(pair_sums(q, y[b], y[c])), acc);
}

// Dot products of one weight row with `T` activation rows into out[0..T-1]; pair p of the row goes to accumulator
// p % 2 of its token. dot_mxfp4 (T = 1) and dot4_mxfp4 (T = 4) take the same float steps per token, with the same
// scale products: the grouped scales pay off for one token (for four, the scalar steps measured faster).
template <int T>
void dot_rows(std::size_t n, const block_mxfp4* x, const block_q8_0* const* y, float* out) {
    const std::size_t nb = n / qk32;
    const __m512i table = biased_levels();
    __m512 acc[T][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm512_setzero_ps();
    }
    std::size_t b = 0;
    for (; T == 1 && b + group_blocks <= nb; b += group_blocks) {
        __m512 d[T];
        for (int t = 0; t < T; ++t) {
            d[t] = scale_products16(x + b, y[t] + b);
        }
        for (int p = 0; p < static_cast<int>(group_blocks / 2); ++p) {
            const std::size_t i = b + 2 * static_cast<std::size_t>(p);
            const __m512i q = pair_values(x[i], x[i + 1], table);
            for (int t = 0; t < T; ++t) {
                const __m512 dp = _mm512_permutexvar_ps(pair_pick(p), d[t]);
                acc[t][p % 2] =
                    _mm512_fmadd_ps(dp, _mm512_cvtepi32_ps(pair_sums(q, y[t][i], y[t][i + 1])), acc[t][p % 2]);
            }
        }
    }
    for (; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512i q = pair_values(x[b], x[c], table);
        const float dx0 = e8m0_to_f32_half(x[b].e), dx1 = e8m0_to_f32_half(x[c].e);
        for (int t = 0; t < T; ++t) {
            acc[t][(b / 2) % 2] = pair_step(acc[t][(b / 2) % 2], q, dx0, dx1, y[t], b, c);
        }
    }
    for (int t = 0; t < T; ++t) {
        out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
    }
}

// The activation side of one token in a several-row call, shared by all its rows: per pair of blocks (a lone last block
// twice), the 64 activation bytes side by side and minus the bias term of dot_biased; per block the scale as a float.
struct decode_activations {
    struct pair {
        __m512i a, minus_bias;
    };
    std::vector<pair> pairs;
    std::vector<float> dy;

    void prepare(const block_q8_0* y, std::size_t nb) {
        pairs.resize((nb + 1) / 2);
        dy.resize(nb);
        for (std::size_t b = 0; b < nb; b += 2) {
            const std::size_t c = b + 1 < nb ? b + 1 : b;
            const __m512i a = load_2x32(y[b].qs, y[c].qs);
            const __m512i bias =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), a);
            pairs[b / 2] = {a, _mm512_sub_epi32(_mm512_setzero_si512(), bias)};
        }
        for (std::size_t b = 0; b < nb; ++b) {
            dy[b] = half(y[b].d);
        }
    }
};

// One row against T tokens' prepared activations into out[t * out_stride]: the float steps of dot_rows<T>, with the
// activation work taken from `ya` (one per token).
template <int T>
inline void row_prepared(std::size_t nb, const block_mxfp4* x, const decode_activations* ya, __m512i table, float* out,
                         std::size_t out_stride) {
    __m512 acc[T][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm512_setzero_ps();
    }
    std::size_t b = 0;
    for (; b + group_blocks <= nb; b += group_blocks) {
        const __m512 exponents = scale_exponents16(x + b);
        __m512 d[T];
        for (int t = 0; t < T; ++t) {
            d[t] = _mm512_scalef_ps(_mm512_loadu_ps(ya[t].dy.data() + b), exponents);
        }
        for (int p = 0; p < static_cast<int>(group_blocks / 2); ++p) {
            const std::size_t i = b + 2 * static_cast<std::size_t>(p);
            const __m512i q = pair_values(x[i], x[i + 1], table);
            for (int t = 0; t < T; ++t) {
                const auto& pa = ya[t].pairs[i / 2];
                const __m512i sums = _mm512_dpbusd_epi32(pa.minus_bias, q, pa.a);
                acc[t][p % 2] =
                    _mm512_fmadd_ps(_mm512_permutexvar_ps(pair_pick(p), d[t]), _mm512_cvtepi32_ps(sums), acc[t][p % 2]);
            }
        }
    }
    for (; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512i q = pair_values(x[b], x[c], table);
        const float dx0 = e8m0_to_f32_half(x[b].e), dx1 = e8m0_to_f32_half(x[c].e);
        for (int t = 0; t < T; ++t) {
            const auto& pa = ya[t].pairs[b / 2];
            const __m512i sums = _mm512_dpbusd_epi32(pa.minus_bias, q, pa.a);
            const __m512 d = join_ps(dx0 * ya[t].dy[b], c != b ? dx1 * ya[t].dy[c] : 0.0f);
            acc[t][(b / 2) % 2] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums), acc[t][(b / 2) % 2]);
        }
    }
    for (int t = 0; t < T; ++t) {
        out[t * out_stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
    }
}

} // namespace

void dot_rows_mxfp4(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                    float* out) {
    const std::size_t nb = n / qk32;
    thread_local decode_activations ya;
    ya.prepare(static_cast<const block_q8_0*>(act), nb);
    const __m512i table = biased_levels();
    const auto* wb = static_cast<const std::uint8_t*>(w);
    for (std::size_t r = 0; r < n_rows; ++r) {
        row_prepared<1>(nb, reinterpret_cast<const block_mxfp4*>(wb + r * w_stride), &ya, table, out + r, 0);
    }
}

void dot4_rows_mxfp4(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                     std::size_t act_stride, float* out, std::size_t out_stride) {
    const std::size_t nb = n / qk32;
    thread_local decode_activations ya[4];
    for (int t = 0; t < 4; ++t) {
        ya[t].prepare(reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride), nb);
    }
    const __m512i table = biased_levels();
    const auto* wb = static_cast<const std::uint8_t*>(w);
    for (std::size_t r = 0; r < n_rows; ++r) {
        row_prepared<4>(nb, reinterpret_cast<const block_mxfp4*>(wb + r * w_stride), ya, table, out + r, out_stride);
    }
}

float dot_mxfp4(std::size_t n, const void* w, const void* act) {
    const block_q8_0* y[1] = {static_cast<const block_q8_0*>(act)};
    float out;
    dot_rows<1>(n, static_cast<const block_mxfp4*>(w), y, &out);
    return out;
}

void dot4_mxfp4(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const block_q8_0* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    dot_rows<4>(n, static_cast<const block_mxfp4*>(w), y, out);
}

} // namespace sluice::kernels::avx512
