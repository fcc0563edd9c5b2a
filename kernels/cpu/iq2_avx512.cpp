// AVX-512 (BW + VNNI) kernels for the IQ2 formats (IQ2_XXS, IQ2_XS, IQ2_S) against Q8_K activations, one token
// and four. IQ2_XXS's 256 grid rows come from their 16-bit bit-plane codes by word permutes over the code table
// (iq_avx512.hpp); IQ2_XS's 512 and IQ2_S's 1024 rows are loaded one by one, which measured faster than a lookup
// through 8 or 16 permutes plus the plane expansion. Sign bits become masks, so the activations' signs are flipped
// with one masked subtraction per 64 values. Bit-identical to the scalar reference (iq2.cpp).
#include "kernels/cpu/iq_avx512.hpp"

#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/simd_kernels.hpp"

#include <cassert>
#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

// IQ2_XXS's code table and the constant permutes; built on first use (never at load time: this file's code may only
// run where AVX-512 was detected).
struct iq2_tables {
    iq_codes<256> codes = make_iq_codes<256, 8>(iq2xxs_grid);
    __m512i halves[4], quarters[4]; // per pair p: dwords of runs 2p, 2p + 1; of 16-value groups 4p..4p+3
    iq2_tables() {
        assert(codes.ok);
        for (int p = 0; p < 4; ++p) {
            halves[p] = pick_halves(2 * p, 2 * p + 1);
            quarters[p] =
                join(_mm256_setr_epi32(4 * p, 4 * p, 4 * p, 4 * p, 4 * p + 1, 4 * p + 1, 4 * p + 1, 4 * p + 1),
                     _mm256_setr_epi32(4 * p + 2, 4 * p + 2, 4 * p + 2, 4 * p + 2, 4 * p + 3, 4 * p + 3, 4 * p + 3,
                                       4 * p + 3));
        }
    }
};

const iq2_tables& tables() {
    static const iq2_tables t;
    return t;
}

// The 16 per-16-value scales of IQ2_XS / IQ2_S (two nibbles per byte) as dwords of (2s + 1) in both words.
inline __m512i scale16_words(const std::uint8_t* scales) {
    std::uint64_t raw;
    std::memcpy(&raw, scales, 8);
    const __m128i v = _mm_cvtsi64_si128(static_cast<long long>(raw));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
    const __m512i s = _mm512_or_si512(_mm512_slli_epi32(_mm512_cvtepu8_epi32(nib), 1), _mm512_set1_epi32(1));
    return _mm512_or_si512(s, _mm512_slli_epi32(s, 16));
}

// Four IQ2_S grid rows: the 10-bit indices' low bytes from `qs` (4 bytes), their two high bits each from `qh`.
inline __m256i s_rows4(const std::uint8_t* qs, std::uint64_t qh) {
    std::uint32_t q;
    std::memcpy(&q, qs, 4);
    const std::uint64_t i = _pdep_u64(q, 0x00ff00ff00ff00ffull) | _pdep_u64(qh, 0x0300030003000300ull);
    return _mm256_set_epi64x(
        static_cast<long long>(iq2s_grid[i >> 48]), static_cast<long long>(iq2s_grid[(i >> 32) & 0xffff]),
        static_cast<long long>(iq2s_grid[(i >> 16) & 0xffff]), static_cast<long long>(iq2s_grid[i & 0xffff]));
}

// The per-16 scales of IQ2_XS / IQ2_S into the four pairs.
inline void set_scales16(const iq2_tables& t, const std::uint8_t* scales, iq_weights& w) {
    const __m512i sw = scale16_words(scales);
    for (int p = 0; p < 4; ++p) {
        w.scale[p] = _mm512_permutexvar_epi32(t.quarters[p], sw);
    }
}

struct unpack_xxs {
    static constexpr bool uses_bsums = false;
    const iq2_tables& t = tables();
    void operator()(const block_iq2_xxs& x, iq_weights& w) const {
        // Run k is 8 bytes: four grid indices, then its sign-and-scale word.
        const __m512i q = _mm512_loadu_si512(x.qs);
        const __m512i indices = _mm512_cvtepu8_epi16(_mm512_cvtepi64_epi32(q));
        const __m256i aux = _mm512_cvtepi64_epi32(_mm512_srli_epi64(q, 32));
        alignas(32) std::uint64_t signs[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(signs), xxs_sign_bytes(aux));
        const __m512i sw = _mm512_castsi256_si512(xxs_scale_words(aux));
        plane_magnitudes(t.codes, lookup_codes(t.codes, indices), w.mag);
        for (int p = 0; p < 4; ++p) {
            w.sign[p] = signs[p];
            w.scale[p] = _mm512_permutexvar_epi32(t.halves[p], sw);
        }
        w.factor = 0.125f * half(x.d);
    }
};

struct unpack_xs {
    static constexpr bool uses_bsums = false;
    const iq2_tables& t = tables();
    void operator()(const block_iq2_xs& x, iq_weights& w) const {
        // Group k is one word: a 9-bit grid index and a 7-bit sign index whose eighth bit is the parity.
        const __m512i q = _mm512_loadu_si512(x.qs);
        // The 32 sign indices as bytes; the eighth sign bit is the parity of the two nibbles' parities (a shuffle
        // each).
        const __m256i s7 = _mm256_and_si256(_mm256_srli_epi16(_mm512_cvtepi16_epi8(_mm512_srli_epi16(q, 8)), 1),
                                            _mm256_set1_epi8(0x7f));
        const __m256i odd = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0,
                                             -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
        const __m256i par = _mm256_xor_si256(
            _mm256_shuffle_epi8(odd, _mm256_and_si256(s7, _mm256_set1_epi8(0x0f))),
            _mm256_shuffle_epi8(odd, _mm256_and_si256(_mm256_srli_epi16(s7, 4), _mm256_set1_epi8(0x0f))));
        alignas(32) std::uint64_t signs[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(signs), _mm256_or_si256(s7, par));
        for (int p = 0; p < 4; ++p) {
            w.sign[p] = signs[p];
        }
        // The rows from the 9-bit indices read straight from memory: indices taken out of the vector register would
        // cost a shuffle each (GCC's vpextrw), on the units the row inserts need.
        for (int p = 0; p < 4; ++p) {
            const std::uint16_t* i = x.qs + 8 * p;
            w.mag[p] = _mm512_set_epi64(
                static_cast<long long>(iq2xs_grid[i[7] & 511]), static_cast<long long>(iq2xs_grid[i[6] & 511]),
                static_cast<long long>(iq2xs_grid[i[5] & 511]), static_cast<long long>(iq2xs_grid[i[4] & 511]),
                static_cast<long long>(iq2xs_grid[i[3] & 511]), static_cast<long long>(iq2xs_grid[i[2] & 511]),
                static_cast<long long>(iq2xs_grid[i[1] & 511]), static_cast<long long>(iq2xs_grid[i[0] & 511]));
        }
        set_scales16(t, x.scales, w);
        w.factor = 0.125f * half(x.d);
    }
};

struct unpack_s {
    static constexpr bool uses_bsums = false;
    const iq2_tables& t = tables();
    void operator()(const block_iq2_s& x, iq_weights& w) const {
        // 10-bit indices: low bytes in qs[0..31], two high bits per group in qh; sign bytes in qs[32..63].
        // Four indices per qh byte, formed in general registers (BMI2 pdep): taking indices out of a vector register
        // costs a shuffle each (GCC's vpextrw), on the units the row inserts need.
        for (int p = 0; p < 4; ++p) {
            w.mag[p] = join(s_rows4(x.qs + 8 * p, x.qh[2 * p]), s_rows4(x.qs + 8 * p + 4, x.qh[2 * p + 1]));
        }
        std::memcpy(w.sign, x.qs + 32, 32);
        set_scales16(t, x.scales, w);
        w.factor = 0.125f * half(x.d);
    }
};

} // namespace

float dot_iq2_xxs(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq2_xxs>(n, w, a, unpack_xxs{});
}
float dot_iq2_xs(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq2_xs>(n, w, a, unpack_xs{});
}
float dot_iq2_s(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq2_s>(n, w, a, unpack_s{});
}
void dot4_iq2_xxs(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq2_xxs>(n, w, a, s, o, unpack_xxs{});
}
void dot4_iq2_xs(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq2_xs>(n, w, a, s, o, unpack_xs{});
}
void dot4_iq2_s(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq2_s>(n, w, a, s, o, unpack_s{});
}

} // namespace sluice::kernels::avx512
