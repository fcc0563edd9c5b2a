// Dispatch of the row-level format operations to the kernel tables.
#include "kernels/quant.hpp"

#include "kernels/cpu/format_kernels.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cassert>

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

} // namespace sluice::kernels
