// Dispatch of the row-level format operations to the kernel tables.
#include "kernels/quant.hpp"

#include "kernels/cpu/format_kernels.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include "kernels/cpu/fp16.hpp"

#include <cassert>
#include <cmath>
#include <cstring>

namespace sluice::kernels {

bool has_kernels(quant_type type) noexcept {
    return scalar_format_kernels(type) != nullptr;
}

bool can_quantize(quant_type type) noexcept {
    switch (type) {
    case quant_type::f32:
    case quant_type::f16:
    case quant_type::bf16:
    case quant_type::q8_0:
    case quant_type::q4_0:
    case quant_type::mxfp4:
    case quant_type::q2_k:
    case quant_type::q3_k:
    case quant_type::q4_k:
    case quant_type::q5_k:
    case quant_type::q6_k: return true;
    default: return false;
    }
}

void dequantize_row(quant_type type, const void* src, float* dst, std::size_t n, isa_level isa) {
    const auto* k = find_format_kernels(isa <= detect_isa() ? isa : detect_isa(), type);
    assert(k != nullptr && n % traits_of(type).block_elems == 0);
    k->dequantize(src, dst, n);
}

void quantize_row(quant_type type, const float* src, void* dst, std::size_t n) {
    assert(n % traits_of(type).block_elems == 0);
    switch (type) {
    case quant_type::f32: scalar::quantize_f32(src, dst, n); break;
    case quant_type::f16: scalar::quantize_f16(src, dst, n); break;
    case quant_type::bf16: scalar::quantize_bf16(src, dst, n); break;
    case quant_type::q8_0: scalar::quantize_q8_0(src, dst, n); break;
    case quant_type::q4_0: scalar::quantize_q4_0(src, dst, n); break;
    case quant_type::mxfp4: scalar::quantize_mxfp4(src, dst, n); break;
    case quant_type::q2_k: scalar::quantize_q2_k(src, dst, n); break;
    case quant_type::q3_k: scalar::quantize_q3_k(src, dst, n); break;
    case quant_type::q4_k: scalar::quantize_q4_k(src, dst, n); break;
    case quant_type::q5_k: scalar::quantize_q5_k(src, dst, n); break;
    case quant_type::q6_k: scalar::quantize_q6_k(src, dst, n); break;
    default: assert(false && "quantize_row: unsupported type");
    }
}

namespace {

// Byte offset of the f16 super-scale in one block of a format without a quantizer (IQ1_M splits its scale).
std::size_t super_scale_offset(quant_type type) noexcept {
    switch (type) {
    case quant_type::tq1_0: return 52;
    case quant_type::tq2_0: return 64;
    default: return 0;
    }
}

void set_super_scale(quant_type type, std::uint8_t* block, std::uint16_t h) {
    if (type == quant_type::iq1_m) {
        for (int i = 0; i < 4; ++i) { // the top nibble of each of the four scale words (bytes 48..55)
            std::uint16_t w;
            std::memcpy(&w, block + 48 + 2 * i, 2);
            w = static_cast<std::uint16_t>((w & 0x0fff) | (((h >> (4 * i)) & 0xf) << 12));
            std::memcpy(block + 48 + 2 * i, &w, 2);
        }
        return;
    }
    std::memcpy(block + super_scale_offset(type), &h, 2);
}

} // namespace

bool can_scale_random_blocks(quant_type type) noexcept {
    switch (type) {
    case quant_type::iq1_s:
    case quant_type::iq1_m:
    case quant_type::iq2_xxs:
    case quant_type::iq2_xs:
    case quant_type::iq2_s:
    case quant_type::iq3_xxs:
    case quant_type::iq3_s:
    case quant_type::tq1_0:
    case quant_type::tq2_0: return true;
    default: return false;
    }
}

void scale_random_blocks(quant_type type, void* blocks, std::size_t n_blocks, float rms) {
    assert(can_scale_random_blocks(type));
    const auto& t = traits_of(type);
    auto* b = static_cast<std::uint8_t*>(blocks);
    float values[256];
    for (std::size_t i = 0; i < n_blocks; ++i, b += t.block_bytes) {
        // The block's RMS at super-scale 1, then the scale that brings it to `rms`.
        set_super_scale(type, b, f32_to_fp16(1.0f));
        dequantize_row(type, b, values, t.block_elems, isa_level::scalar);
        double sq = 0;
        for (std::size_t j = 0; j < t.block_elems; ++j) {
            sq += static_cast<double>(values[j]) * values[j];
        }
        const double unit = std::sqrt(sq / t.block_elems);
        set_super_scale(type, b, f32_to_fp16(unit > 0 ? static_cast<float>(rms / unit) : 0.0f));
    }
}

} // namespace sluice::kernels
