// AVX2 and AVX-512 kernel tables. A format without a kernel at a level keeps the lower level's entry
// (find_format_kernels falls back), so every format runs at every level.
#include "kernels/cpu/format_kernels.hpp"
#include "kernels/cpu/scalar_kernels.hpp"
#include "kernels/cpu/simd_kernels.hpp"

namespace sluice::kernels {

const format_kernels* avx2_format_kernels(quant_type type) noexcept {
    static constexpr format_kernels f32{act_format::f32, scalar::dequantize_f32, avx2::dot_f32}; // memcpy
    static constexpr format_kernels f16{act_format::f32, avx2::dequantize_f16, avx2::dot_f16, avx2::dot4_f16};
    static constexpr format_kernels bf16{act_format::f32, avx2::dequantize_bf16, avx2::dot_bf16, avx2::dot4_bf16};
    static constexpr format_kernels q8_0{act_format::q8_0, avx2::dequantize_q8_0, avx2::dot_q8_0, avx2::dot4_q8_0};
    static constexpr format_kernels q4_0{act_format::q8_0, avx2::dequantize_q4_0, avx2::dot_q4_0};
    static constexpr format_kernels q4_1{act_format::q8_0, avx2::dequantize_q4_1, avx2::dot_q4_1};
    static constexpr format_kernels q5_0{act_format::q8_0, avx2::dequantize_q5_0, avx2::dot_q5_0};
    static constexpr format_kernels q5_1{act_format::q8_0, avx2::dequantize_q5_1, avx2::dot_q5_1};
    static constexpr format_kernels iq4_nl{act_format::q8_0, avx2::dequantize_iq4_nl, avx2::dot_iq4_nl};
    static constexpr format_kernels q4_k{act_format::q8_k, avx2::dequantize_q4_k, avx2::dot_q4_k, avx2::dot4_q4_k};
    static constexpr format_kernels q5_k{act_format::q8_k, avx2::dequantize_q5_k, avx2::dot_q5_k};
    static constexpr format_kernels q6_k{act_format::q8_k, avx2::dequantize_q6_k, avx2::dot_q6_k, avx2::dot4_q6_k};
    static constexpr format_kernels iq4_xs{act_format::q8_k, avx2::dequantize_iq4_xs, avx2::dot_iq4_xs};
    static constexpr format_kernels mxfp4{act_format::q8_0, avx2::dequantize_mxfp4, avx2::dot_mxfp4,
                                         avx2::dot4_mxfp4};
    static constexpr format_kernels q2_k{act_format::q8_k, avx2::dequantize_q2_k, avx2::dot_q2_k, avx2::dot4_q2_k};
    static constexpr format_kernels q3_k{act_format::q8_k, avx2::dequantize_q3_k, avx2::dot_q3_k, avx2::dot4_q3_k};
    static constexpr format_kernels iq2_xxs{act_format::q8_k, scalar::dequantize_iq2_xxs, avx2::dot_iq2_xxs, avx2::dot4_iq2_xxs};
    static constexpr format_kernels iq2_xs{act_format::q8_k, scalar::dequantize_iq2_xs, avx2::dot_iq2_xs, avx2::dot4_iq2_xs};
    static constexpr format_kernels iq2_s{act_format::q8_k, scalar::dequantize_iq2_s, avx2::dot_iq2_s, avx2::dot4_iq2_s};
    static constexpr format_kernels iq3_xxs{act_format::q8_k, scalar::dequantize_iq3_xxs, avx2::dot_iq3_xxs, avx2::dot4_iq3_xxs};
    static constexpr format_kernels iq3_s{act_format::q8_k, scalar::dequantize_iq3_s, avx2::dot_iq3_s, avx2::dot4_iq3_s};
    static constexpr format_kernels iq1_s{act_format::q8_k, scalar::dequantize_iq1_s, avx2::dot_iq1_s, avx2::dot4_iq1_s};
    static constexpr format_kernels iq1_m{act_format::q8_k, scalar::dequantize_iq1_m, avx2::dot_iq1_m, avx2::dot4_iq1_m};
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
    default: return nullptr;
    }
}

const format_kernels* avx512_format_kernels(quant_type type) noexcept {
    static constexpr format_kernels f32{act_format::f32, scalar::dequantize_f32, avx512::dot_f32};
    static constexpr format_kernels f16{act_format::f32, avx512::dequantize_f16, avx512::dot_f16, avx512::dot4_f16,
                                        avx512::dot4_rows_f16};
    static constexpr format_kernels bf16{act_format::f32, avx2::dequantize_bf16, avx512::dot_bf16,
                                         avx512::dot4_bf16, avx512::dot4_rows_bf16};
    static constexpr format_kernels q8_0{act_format::q8_0, avx2::dequantize_q8_0, avx512::dot_q8_0, avx512::dot4_q8_0,
                                         avx512::dot4_rows_q8_0, avx512::dot_rows_q8_0};
    static constexpr format_kernels q4_k{act_format::q8_k, avx2::dequantize_q4_k, avx512::dot_q4_k,
                                         avx512::dot4_q4_k, nullptr, avx512::dot_rows_q4_k, avx512::dot_few_q4_k};
    static constexpr format_kernels q6_k{act_format::q8_k, avx2::dequantize_q6_k, avx512::dot_q6_k, avx512::dot4_q6_k};
    static constexpr format_kernels q5_k{act_format::q8_k, avx2::dequantize_q5_k, avx512::dot_q5_k};
    static constexpr format_kernels q4_0{act_format::q8_0, avx2::dequantize_q4_0, avx512::dot_q4_0, avx512::dot4_q4_0};
    static constexpr format_kernels q4_1{act_format::q8_0, avx2::dequantize_q4_1, avx512::dot_q4_1};
    static constexpr format_kernels q5_0{act_format::q8_0, avx2::dequantize_q5_0, avx512::dot_q5_0};
    static constexpr format_kernels q5_1{act_format::q8_0, avx2::dequantize_q5_1, avx512::dot_q5_1};
    static constexpr format_kernels iq4_nl{act_format::q8_0, avx2::dequantize_iq4_nl, avx512::dot_iq4_nl};
    static constexpr format_kernels iq4_xs{act_format::q8_k, avx2::dequantize_iq4_xs, avx512::dot_iq4_xs};
    static constexpr format_kernels mxfp4{act_format::q8_0, avx2::dequantize_mxfp4, avx512::dot_mxfp4,
                                         avx512::dot4_mxfp4, avx512::dot4_rows_mxfp4, avx512::dot_rows_mxfp4};
    static constexpr format_kernels q2_k{act_format::q8_k, avx2::dequantize_q2_k, avx512::dot_q2_k, avx512::dot4_q2_k};
    static constexpr format_kernels q3_k{act_format::q8_k, avx2::dequantize_q3_k, avx512::dot_q3_k, avx512::dot4_q3_k};
    static constexpr format_kernels iq2_xxs{act_format::q8_k, scalar::dequantize_iq2_xxs, avx512::dot_iq2_xxs,
                                            avx512::dot4_iq2_xxs};
    static constexpr format_kernels iq2_xs{act_format::q8_k, scalar::dequantize_iq2_xs, avx512::dot_iq2_xs,
                                           avx512::dot4_iq2_xs};
    static constexpr format_kernels iq2_s{act_format::q8_k, scalar::dequantize_iq2_s, avx512::dot_iq2_s,
                                          avx512::dot4_iq2_s};
    static constexpr format_kernels iq3_xxs{act_format::q8_k, scalar::dequantize_iq3_xxs, avx512::dot_iq3_xxs,
                                            avx512::dot4_iq3_xxs};
    static constexpr format_kernels iq3_s{act_format::q8_k, scalar::dequantize_iq3_s, avx512::dot_iq3_s,
                                          avx512::dot4_iq3_s};
    static constexpr format_kernels iq1_s{act_format::q8_k, scalar::dequantize_iq1_s, avx512::dot_iq1_s,
                                          avx512::dot4_iq1_s};
    static constexpr format_kernels iq1_m{act_format::q8_k, scalar::dequantize_iq1_m, avx512::dot_iq1_m,
                                          avx512::dot4_iq1_m};
    switch (type) {
    case quant_type::f32: return &f32;
    case quant_type::f16: return &f16;
    case quant_type::bf16: return &bf16;
    case quant_type::q8_0: return &q8_0;
    case quant_type::q4_k: return &q4_k;
    case quant_type::q5_k: return &q5_k;
    case quant_type::q6_k: return &q6_k;
    case quant_type::q4_0: return &q4_0;
    case quant_type::q4_1: return &q4_1;
    case quant_type::q5_0: return &q5_0;
    case quant_type::q5_1: return &q5_1;
    case quant_type::iq4_nl: return &iq4_nl;
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
    default: return nullptr;
    }
}

} // namespace sluice::kernels
