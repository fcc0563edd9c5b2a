// AVX-512 (BW + VNNI) kernels for MXFP4 weights against Q8_0 activations: two blocks per 512-bit step, the FP4
// levels looked up with one byte shuffle (stored +128 so dpbusd takes them unsigned), as IQ4_NL does.
#include "kernels/cpu/blocks.hpp"
#include "kernels/cpu/simd_kernels.hpp"
#include "kernels/cpu/simd_util_avx512.hpp"

namespace sluice::kernels::avx512 {
namespace {

// The 16 doubled levels + 128 in every 128-bit lane.
inline __m512i biased_levels() {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mxfp4_levels));
    return _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
}

// The values of blocks x0 and x1 (biased), shared by every token.
inline __m512i pair_values(const block_mxfp4& x0, const block_mxfp4& x1, __m512i table) {
    return _mm512_shuffle_epi8(table, nibbles_2x16(x0.qs, x1.qs));
}

// Blocks b and c of one token added to `acc` (c == b for a lone last block, whose twin gets scale 0). dot_mxfp4
// and dot4_mxfp4 share it, so they agree bit for bit.
inline __m512 pair_step(__m512 acc, __m512i q, float dx0, float dx1, const block_q8_0* y, std::size_t b,
                        std::size_t c) {
    const __m512i sums = dot_biased(q, load_2x32(y[b].qs, y[c].qs), _mm512_set1_epi8(static_cast<char>(0x80)));
    const __m512 d = join_ps(dx0 * half(y[b].d), c != b ? dx1 * half(y[c].d) : 0.0f);
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums), acc);
}

} // namespace

float dot_mxfp4(std::size_t n, const void* w, const void* act) {
    const auto* x = static_cast<const block_mxfp4*>(w);
    const auto* y = static_cast<const block_q8_0*>(act);
    const std::size_t nb = n / qk32;
    const __m512i table = biased_levels();
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (std::size_t b = 0; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512i q = pair_values(x[b], x[c], table);
        acc[(b / 2) % 2] = pair_step(acc[(b / 2) % 2], q, e8m0_to_f32_half(x[b].e), e8m0_to_f32_half(x[c].e), y, b, c);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
}

void dot4_mxfp4(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out) {
    const auto* x = static_cast<const block_mxfp4*>(w);
    const block_q8_0* y[4];
    for (int t = 0; t < 4; ++t) {
        y[t] = reinterpret_cast<const block_q8_0*>(static_cast<const std::uint8_t*>(act) + t * act_stride);
    }
    const std::size_t nb = n / qk32;
    const __m512i table = biased_levels();
    __m512 acc[4][2];
    for (auto& a : acc) {
        a[0] = a[1] = _mm512_setzero_ps();
    }
    for (std::size_t b = 0; b < nb; b += 2) {
        const std::size_t c = b + 1 < nb ? b + 1 : b;
        const __m512i q = pair_values(x[b], x[c], table);
        const float dx0 = e8m0_to_f32_half(x[b].e), dx1 = e8m0_to_f32_half(x[c].e);
        for (int t = 0; t < 4; ++t) {
            acc[t][(b / 2) % 2] = pair_step(acc[t][(b / 2) % 2], q, dx0, dx1, y[t], b, c);
        }
    }
    for (int t = 0; t < 4; ++t) {
        out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
    }
}

} // namespace sluice::kernels::avx512
