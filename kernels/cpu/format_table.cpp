// Scalar kernel table, activation quantizers per ISA and the lookup that falls back across levels.
#include "kernels/cpu/format_kernels.hpp"
#include "kernels/cpu/scalar_kernels.hpp"
#include "kernels/cpu/simd_kernels.hpp"

namespace sluice::kernels {

const format_kernels* scalar_format_kernels(quant_type type) noexcept {
    using namespace scalar;
    static constexpr format_kernels f32{act_format::f32, dequantize_f32, dot_f32};
    static constexpr format_kernels f16{act_format::f32, dequantize_f16, dot_f16};
    static constexpr format_kernels bf16{act_format::f32, dequantize_bf16, dot_bf16};
    static constexpr format_kernels q8_0{act_format::q8_0, dequantize_q8_0, dot_q8_0};
    static constexpr format_kernels q4_0{act_format::q8_0, dequantize_q4_0, dot_q4_0};
    static constexpr format_kernels q4_1{act_format::q8_0, dequantize_q4_1, dot_q4_1};
    static constexpr format_kernels q5_0{act_format::q8_0, dequantize_q5_0, dot_q5_0};
    static constexpr format_kernels q5_1{act_format::q8_0, dequantize_q5_1, dot_q5_1};
    static constexpr format_kernels iq4_nl{act_format::q8_0, dequantize_iq4_nl, dot_iq4_nl};
    static constexpr format_kernels q4_k{act_format::q8_k, dequantize_q4_k, dot_q4_k};
    static constexpr format_kernels q5_k{act_format::q8_k, dequantize_q5_k, dot_q5_k};
    static constexpr format_kernels q6_k{act_format::q8_k, dequantize_q6_k, dot_q6_k};
    static constexpr format_kernels iq4_xs{act_format::q8_k, dequantize_iq4_xs, dot_iq4_xs};
    static constexpr format_kernels mxfp4{act_format::q8_0, dequantize_mxfp4, dot_mxfp4};
    static constexpr format_kernels q2_k{act_format::q8_k, dequantize_q2_k, dot_q2_k};
    static constexpr format_kernels q3_k{act_format::q8_k, dequantize_q3_k, dot_q3_k};
    static constexpr format_kernels iq2_xxs{act_format::q8_k, dequantize_iq2_xxs, dot_iq2_xxs};
    static constexpr format_kernels iq2_xs{act_format::q8_k, dequantize_iq2_xs, dot_iq2_xs};
    static constexpr format_kernels iq2_s{act_format::q8_k, dequantize_iq2_s, dot_iq2_s};
    static constexpr format_kernels iq3_xxs{act_format::q8_k, dequantize_iq3_xxs, dot_iq3_xxs};
    static constexpr format_kernels iq3_s{act_format::q8_k, dequantize_iq3_s, dot_iq3_s};
    static constexpr format_kernels iq1_s{act_format::q8_k, dequantize_iq1_s, dot_iq1_s};
    static constexpr format_kernels iq1_m{act_format::q8_k, dequantize_iq1_m, dot_iq1_m};
    static constexpr format_kernels tq1_0{act_format::q8_k, dequantize_tq1_0, dot_tq1_0};
    static constexpr format_kernels tq2_0{act_format::q8_k, dequantize_tq2_0, dot_tq2_0};
    switch (type) {
    case quant_type::f32: return &f32;
    case quant_type::f16: return &f16;
    case quant_type::bf16: return &bf16;
    case quant_type::q8_0: return &q8_0;
    case quant_type::q4_0: return &q4_0;
    case quant_type::q4_1: return &q4_1;
    case quant_type::q5_0: return &q5_0;
    case quant_type::q5_1: return &q5_1;
    case quant_type::iq4_nl: return &iq4_nl;
    case quant_type::q4_k: return &q4_k;
    case quant_type::q5_k: return &q5_k;
    case quant_type::q6_k: return &q6_k;
    case quant_type::iq4_xs: return &iq4_xs;
    case quant_type::mxfp4: return &mxfp4;
    case quant_type::q2_k: return &q2_k;
    case quant_type::q3_k: return &q3_k;
    case quant_type::iq2_xxs: return &iq2_xxs;
    case quant_type::iq2_xs: return &iq2_xs;
    case quant_type::iq2_s: return &iq2_s;
    case quant_type::iq3_xxs: return &iq3_xxs;
    case quant_type::iq3_s: return &iq3_s;
    case quant_type::iq1_s: return &iq1_s;
    case quant_type::iq1_m: return &iq1_m;
    case quant_type::tq1_0: return &tq1_0;
    case quant_type::tq2_0: return &tq2_0;
    default: return nullptr;
    }
}

// The AVX2 activation quantizers are memory-bound on a row of floats; AVX-512 machines use them too.
prepare_fn prepare_kernel(isa_level isa, act_format act) noexcept {
    switch (act) {
    case act_format::f32: return scalar::quantize_f32;
    case act_format::q8_0:
        return isa >= isa_level::avx2 ? avx2::quantize_q8_0 : scalar::quantize_q8_0;
    case act_format::q8_k:
        return isa >= isa_level::avx2 ? avx2::quantize_q8_k : scalar::quantize_q8_k;
    }
    return nullptr;
}

const format_kernels* find_format_kernels(isa_level isa, quant_type type) noexcept {
    if (isa == isa_level::avx512) {
        if (const auto* k = avx512_format_kernels(type)) {
            return k;
        }
        isa = isa_level::avx2;
    }
    if (isa == isa_level::avx2) {
        if (const auto* k = avx2_format_kernels(type)) {
            return k;
        }
    }
    return scalar_format_kernels(type);
}

} // namespace sluice::kernels
