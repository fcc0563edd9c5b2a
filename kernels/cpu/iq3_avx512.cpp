// AVX-512 (BW + VNNI) kernels for the IQ3 formats (IQ3_XXS, IQ3_S) against Q8_K activations, one token and four.
// Rows of 4 grid values come from their 16-bit codes by word permutes over the code table (iq_avx512.hpp), 32 rows
// per lookup; signs become masks. Bit-identical to the scalar reference (iq3.cpp).
#include "kernels/cpu/iq_avx512.hpp"

#include "kernels/cpu/iq_grids.hpp"
#include "kernels/cpu/simd_kernels.hpp"

#include <cassert>
#include <cstring>

namespace sluice::kernels::avx512 {
namespace {

// Code table and constant permutes of one IQ3 grid; built on first use (see iq2_avx512.cpp).
template <std::size_t Rows>
struct iq3_tables {
    iq_codes<Rows> codes;
    __m512i levels, pick[2], halves[4];
    explicit iq3_tables(const std::uint32_t* grid) : codes(make_iq_codes<Rows, 4>(grid)) {
        assert(codes.ok);
        levels = level_table(codes);
        for (int p = 0; p < 4; ++p) {
            halves[p] = pick_halves(2 * p, 2 * p + 1);
        }
        pick[0] = pick_rows4(0);
        pick[1] = pick_rows4(16);
    }
};

const iq3_tables<256>& xxs_tables() {
    static const iq3_tables<256> t(iq3xxs_grid);
    return t;
}
const iq3_tables<512>& s_tables() {
    static const iq3_tables<512> t(iq3s_grid);
    return t;
}

// The 64 rows of a super-block (codes of rows 0..31 and 32..63) into the four pairs, and per-run scale words.
template <std::size_t Rows>
inline void set_rows(const iq3_tables<Rows>& t, __m512i codes_lo, __m512i codes_hi, __m512i scale_words,
                     iq_weights& w) {
    for (int p = 0; p < 4; ++p) {
        w.mag[p] = expand_rows4(p < 2 ? codes_lo : codes_hi, t.pick[p % 2], t.levels);
        w.scale[p] = _mm512_permutexvar_epi32(t.halves[p], scale_words);
    }
}

struct unpack_xxs {
    static constexpr bool uses_bsums = false;
    const iq3_tables<256>& t = xxs_tables();
    void operator()(const block_iq3_xxs& x, iq_weights& w) const {
        // 64 grid indices, then per run a sign-and-scale word as IQ2_XXS's.
        const __m512i q = _mm512_loadu_si512(x.qs);
        const __m512i lo = lookup_codes(t.codes, _mm512_cvtepu8_epi16(_mm512_castsi512_si256(q)));
        const __m512i hi = lookup_codes(t.codes, _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(q, 1)));
        const __m256i aux = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 64));
        alignas(32) std::uint64_t signs[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(signs), xxs_sign_bytes(aux));
        for (int p = 0; p < 4; ++p) {
            w.sign[p] = signs[p];
        }
        set_rows(t, lo, hi, _mm512_castsi256_si512(xxs_scale_words(aux)), w);
        w.factor = 0.25f * half(x.d);
    }
};

struct unpack_s {
    static constexpr bool uses_bsums = false;
    const iq3_tables<512>& t = s_tables();
    void operator()(const block_iq3_s& x, iq_weights& w) const {
        // 9-bit indices: low bytes in qs, the ninth bit of row k is bit k of qh; one sign bit per value.
        const __m512i q = _mm512_loadu_si512(x.qs);
        std::uint64_t qh;
        std::memcpy(&qh, x.qh, 8);
        const __m512i ninth = _mm512_set1_epi16(256);
        __m512i lo = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(q));
        __m512i hi = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(q, 1));
        lo = _mm512_mask_add_epi16(lo, _cvtu32_mask32(static_cast<std::uint32_t>(qh)), lo, ninth);
        hi = _mm512_mask_add_epi16(hi, _cvtu32_mask32(static_cast<std::uint32_t>(qh >> 32)), hi, ninth);
        std::memcpy(w.sign, x.signs, 32);
        // Run k's 4-bit scale is nibble k % 2 of scales[k / 2]; its factor is 2s + 1.
        std::uint32_t raw;
        std::memcpy(&raw, x.scales, 4);
        const __m128i v = _mm_cvtsi32_si128(static_cast<int>(raw));
        const __m128i m = _mm_set1_epi8(0x0f);
        const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
        const __m256i s = _mm256_or_si256(_mm256_slli_epi32(_mm256_cvtepu8_epi32(nib), 1), _mm256_set1_epi32(1));
        const __m256i sw = _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
        set_rows(t, lookup_codes(t.codes, lo), lookup_codes(t.codes, hi), _mm512_castsi256_si512(sw), w);
        w.factor = half(x.d);
    }
};

} // namespace

float dot_iq3_xxs(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq3_xxs>(n, w, a, unpack_xxs{});
}
float dot_iq3_s(std::size_t n, const void* w, const void* a) {
    return dot_iq<block_iq3_s>(n, w, a, unpack_s{});
}
void dot4_iq3_xxs(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq3_xxs>(n, w, a, s, o, unpack_xxs{});
}
void dot4_iq3_s(std::size_t n, const void* w, const void* a, std::size_t s, float* o) {
    dot4_iq<block_iq3_s>(n, w, a, s, o, unpack_s{});
}

} // namespace sluice::kernels::avx512
