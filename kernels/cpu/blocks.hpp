// Byte layouts of the GGUF block formats (one struct per format) and of the 8-bit activation blocks.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace sluice::kernels {

inline constexpr std::size_t qk32 = 32;  ///< values per block of the 32-formats
inline constexpr std::size_t qk_k = 256; ///< values per super-block of the K-formats and IQ4_XS
inline constexpr std::size_t k_scale_bytes = 12;

/// The 16 non-linear levels shared by IQ4_NL and IQ4_XS.
inline constexpr std::int8_t iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                1,    13,   25,  38,  53,  69,  89,  113};

/// The 16 FP4 (E2M1) values of MXFP4, doubled so they are integers: index bit 3 is the sign.
inline constexpr std::int8_t mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/// Half the value of an E8M0 scale byte, 2^(e - 128), as GGML decodes it: every byte is a finite power of two
/// (0 and 1 give the subnormals 2^-128 and 2^-127; 255, a NaN in the OCP spec, gives 2^127). The half goes with
/// the doubled mxfp4_levels, so level * scale is the exact FP4 value times 2^(e - 127).
inline float e8m0_to_f32_half(std::uint8_t e) noexcept {
    const std::uint32_t bits = e < 2 ? std::uint32_t{0x00200000} << e : static_cast<std::uint32_t>(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

struct block_q4_0 {
    std::uint16_t d;       // f16 scale
    std::uint8_t qs[16];   // value j in low nibble of qs[j], value j+16 in high nibble; stored +8
};
struct block_q4_1 {
    std::uint16_t d, m;    // f16 scale and minimum: x = d*q + m
    std::uint8_t qs[16];
};
struct block_q5_0 {
    std::uint16_t d;
    std::uint8_t qh[4];    // fifth bit of value j is bit j of the little-endian 32-bit qh
    std::uint8_t qs[16];   // stored +16
};
struct block_q5_1 {
    std::uint16_t d, m;
    std::uint8_t qh[4];
    std::uint8_t qs[16];
};
struct block_q8_0 {
    std::uint16_t d;
    std::int8_t qs[32];
};
struct block_iq4_nl {
    std::uint16_t d;
    std::uint8_t qs[16];   // indices into iq4_levels, nibble order as Q4_0
};
struct block_q2_k {
    std::uint8_t scales[16];             // per 16 values: scale in the low nibble, min in the high one
    std::uint8_t qs[64];                 // 2-bit values: value 128h + 32s + l is bits 2s..2s+1 of qs[32h + l]
    std::uint16_t d, dmin;               // f16 super-scales: x = d*scale*q - dmin*min
};
struct block_q3_k {
    std::uint8_t hmask[32];              // third bit of value 32j + l is bit j of hmask[l]; clear means q - 4
    std::uint8_t qs[64];                 // low 2 bits, laid out as Q2_K's
    std::uint8_t scales[12];             // 16 six-bit scales stored +32 (see unpack_q3_k_scales)
    std::uint16_t d;
};
struct block_q4_k {
    std::uint16_t d, dmin;               // f16 super-scales of the 6-bit scales and mins
    std::uint8_t scales[k_scale_bytes];  // 8 packed (scale, min) pairs of 6 bits
    std::uint8_t qs[128];                // 64-value groups: low nibbles = first 32, high = next 32
};
struct block_q5_k {
    std::uint16_t d, dmin;
    std::uint8_t scales[k_scale_bytes];
    std::uint8_t qh[32];                 // bit 2g / 2g+1 of qh[l]: fifth bit of group g's values l / 32+l
    std::uint8_t qs[128];
};
struct block_q6_k {
    std::uint8_t ql[128];                // low 4 bits
    std::uint8_t qh[64];                 // high 2 bits
    std::int8_t scales[16];              // one per 16 values
    std::uint16_t d;
};
struct block_iq4_xs {
    std::uint16_t d;
    std::uint16_t scales_h;              // high 2 bits of the 8 six-bit scales
    std::uint8_t scales_l[4];            // low 4 bits, two per byte
    std::uint8_t qs[128];                // 8 groups of 32 as IQ4_NL
};
struct block_mxfp4 {
    std::uint8_t e;        // E8M0 shared scale
    std::uint8_t qs[16];   // indices into mxfp4_levels, nibble order as Q4_0
};
struct block_iq2_xxs {
    std::uint16_t d;
    std::uint16_t qs[32];                // per 32 values: 4 grid bytes, then 4 x 7-bit sign indices + 4-bit scale
};
struct block_iq2_xs {
    std::uint16_t d;
    std::uint16_t qs[32];                // per 8 values: 9-bit grid index, 7-bit sign index
    std::uint8_t scales[8];              // per 32 values: 4-bit scales of the first and last 16
};
struct block_iq2_s {
    std::uint16_t d;
    std::uint8_t qs[64];                 // 32 low bytes of the 10-bit grid indices, then 32 sign bytes
    std::uint8_t qh[8];                  // 2 high index bits per 8 values
    std::uint8_t scales[8];
};
struct block_iq3_xxs {
    std::uint16_t d;
    std::uint8_t qs[96];                 // 64 grid bytes (4 values each), then per 32 values a 32-bit word as IQ2_XXS's
};
struct block_iq3_s {
    std::uint16_t d;
    std::uint8_t qs[64];                 // low bytes of the 9-bit grid indices
    std::uint8_t qh[8];                  // their ninth bits
    std::uint8_t signs[32];              // one bit per value
    std::uint8_t scales[4];              // 4-bit scale per 32 values
};
struct block_iq1_s {
    std::uint16_t d;
    std::uint8_t qs[32];                 // low bytes of the 11-bit grid indices
    std::uint16_t qh[8];                 // per 32 values: 3 high bits per index, 3-bit scale, delta sign
};
struct block_iq1_m {
    std::uint8_t qs[32];                 // low bytes of the 11-bit grid indices
    std::uint8_t qh[16];                 // per 8 values a nibble: 3 high index bits, delta sign
    std::uint8_t scales[8];              // 16 three-bit scales; the f16 super-scale in the top nibbles of the words
};
struct block_tq1_0 {
    std::uint8_t qs[48];                 // base-3 digits, 5 values per byte
    std::uint8_t qh[4];                  // 4 values per byte
    std::uint16_t d;
};
struct block_tq2_0 {
    std::uint8_t qs[64];                 // 2-bit values + 1, laid out as Q2_K's
    std::uint16_t d;
};
/// 8-bit activation super-block for the K-formats: float scale and sums of each 16 values.
struct block_q8_k {
    float d;
    std::int8_t qs[256];
    std::int16_t bsums[16];
};

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34 && sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_q4_k) == 144 && sizeof(block_q5_k) == 176 && sizeof(block_q6_k) == 210);
static_assert(sizeof(block_q2_k) == 84 && sizeof(block_q3_k) == 110);
static_assert(sizeof(block_iq2_xxs) == 66 && sizeof(block_iq2_xs) == 74 && sizeof(block_iq2_s) == 82);
static_assert(sizeof(block_iq3_xxs) == 98 && sizeof(block_iq3_s) == 110);
static_assert(sizeof(block_iq1_s) == 50 && sizeof(block_iq1_m) == 56);
static_assert(sizeof(block_tq1_0) == 54 && sizeof(block_tq2_0) == 66);
static_assert(sizeof(block_iq4_xs) == 136 && sizeof(block_q8_k) == 292 && sizeof(block_mxfp4) == 17);

/// Unpacks the 6-bit scale and min of group `j` (0..7) of a Q4_K/Q5_K super-block.
inline void unpack_scale_min_k4(const std::uint8_t* q, int j, std::uint8_t& sc, std::uint8_t& m) noexcept {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = static_cast<std::uint8_t>((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/// Packs 8 six-bit scales and mins into the 12-byte Q4_K/Q5_K layout (inverse of unpack_scale_min_k4).
inline void pack_scale_min_k4(const std::uint8_t* sc, const std::uint8_t* m, std::uint8_t* q) noexcept {
    for (int j = 0; j < 4; ++j) {
        q[j] = static_cast<std::uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = static_cast<std::uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        q[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
    }
}

/// Unpacks the 16 signed six-bit scales of a Q3_K super-block: scale j has its low 4 bits in the low (j < 8) or
/// high (j >= 8) nibble of byte j % 8, its high 2 bits at bit 2*(j/4) of byte 8 + j % 4, and is stored +32.
inline void unpack_q3_k_scales(const std::uint8_t* q, std::int8_t* out) noexcept {
    for (int j = 0; j < 16; ++j) {
        const int low = (j < 8 ? q[j] : q[j - 8] >> 4) & 0xf;
        const int high = (q[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = static_cast<std::int8_t>((low | (high << 4)) - 32);
    }
}

/// Packs 16 scales in [-32, 31] into the Q3_K layout (inverse of unpack_q3_k_scales).
inline void pack_q3_k_scales(const std::int8_t* sc, std::uint8_t* q) noexcept {
    for (int i = 0; i < 12; ++i) {
        q[i] = 0;
    }
    for (int j = 0; j < 16; ++j) {
        const int v = sc[j] + 32;
        q[j % 8] = static_cast<std::uint8_t>(q[j % 8] | ((v & 0xf) << (j < 8 ? 0 : 4)));
        q[8 + j % 4] = static_cast<std::uint8_t>(q[8 + j % 4] | (((v >> 4) & 3) << (2 * (j / 4))));
    }
}

} // namespace sluice::kernels
