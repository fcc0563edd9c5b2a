// The q4_k_x16 layout: packing sixteen Q4_K rows into interleaved blocks and back.
#include "kernels/cpu/q4_k_x16.hpp"

#include "kernels/cpu/blocks.hpp"

#include <cstring>

namespace sluice::kernels {

void pack_q4_k_x16(const void* src, std::size_t row_bytes, std::size_t n_blocks, void* dst) {
    const auto* in = static_cast<const std::uint8_t*>(src);
    auto* out = static_cast<block_q4_k_x16*>(dst);
    for (std::size_t b = 0; b < n_blocks; ++b) {
        block_q4_k_x16& o = out[b];
        std::memset(o.scales_hi, 0, sizeof o.scales_hi);
        for (std::size_t r = 0; r < 16; ++r) {
            const auto& x = *reinterpret_cast<const block_q4_k*>(in + r * row_bytes + b * sizeof(block_q4_k));
            o.d[r] = x.d;
            o.dmin[r] = x.dmin;
            for (int s = 0; s < 8; ++s) {
                std::uint8_t sc = 0, m = 0;
                unpack_scale_min_k4(x.scales, s, sc, m);
                o.scales_lo[16 * s + r] = static_cast<std::uint8_t>((sc & 15) | ((m & 15) << 4));
                const int shift = s < 4 ? 0 : 4;
                o.scales_hi[16 * (s % 4) + r] |= static_cast<std::uint8_t>(((sc >> 4) | ((m >> 4) << 2)) << shift);
            }
            // The row's 256 values in order, then each run of 8 as one 4-byte word per row (4 low, 4 high nibbles).
            std::uint8_t q[qk_k];
            for (int c = 0; c < 4; ++c) {
                for (int l = 0; l < 32; ++l) {
                    q[64 * c + l] = x.qs[32 * c + l] & 15;
                    q[64 * c + 32 + l] = x.qs[32 * c + l] >> 4;
                }
            }
            for (int k = 0; k < 32; ++k) {
                std::uint32_t lo, hi;
                std::memcpy(&lo, q + 8 * k, 4);
                std::memcpy(&hi, q + 8 * k + 4, 4);
                const std::uint32_t word = lo | (hi << 4);
                std::memcpy(o.qs + 64 * k + 4 * r, &word, 4);
            }
        }
    }
}

void unpack_q4_k_x16(const void* src, std::size_t n_blocks, void* dst, std::size_t row_bytes) {
    const auto* in = static_cast<const block_q4_k_x16*>(src);
    auto* out = static_cast<std::uint8_t*>(dst);
    for (std::size_t b = 0; b < n_blocks; ++b) {
        const block_q4_k_x16& g = in[b];
        for (std::size_t r = 0; r < 16; ++r) {
            auto& x = *reinterpret_cast<block_q4_k*>(out + r * row_bytes + b * sizeof(block_q4_k));
            x.d = g.d[r];
            x.dmin = g.dmin[r];
            std::uint8_t sc[8], m[8];
            for (int s = 0; s < 8; ++s) {
                const int shift = s < 4 ? 0 : 4;
                const int hi = (g.scales_hi[16 * (s % 4) + r] >> shift) & 15;
                sc[s] = static_cast<std::uint8_t>((g.scales_lo[16 * s + r] & 15) | ((hi & 3) << 4));
                m[s] = static_cast<std::uint8_t>((g.scales_lo[16 * s + r] >> 4) | ((hi >> 2) << 4));
            }
            pack_scale_min_k4(sc, m, x.scales);
            std::memset(x.qs, 0, sizeof x.qs);
            for (int s = 0; s < 8; ++s) {
                for (int p = 0; p < 4; ++p) {
                    for (int i = 0; i < 4; ++i) {
                        const std::uint8_t byte = g.qs[64 * (4 * s + p) + 4 * r + i];
                        for (int h = 0; h < 2; ++h) {
                            const int v = 32 * s + 8 * p + 4 * h + i;
                            const int q = (byte >> (4 * h)) & 15;
                            x.qs[32 * (v / 64) + v % 32] |= static_cast<std::uint8_t>(q << (v % 64 >= 32 ? 4 : 0));
                        }
                    }
                }
            }
        }
    }
}

} // namespace sluice::kernels
