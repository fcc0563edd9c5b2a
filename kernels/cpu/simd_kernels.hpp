// Declarations of the AVX2 and AVX-512 kernels; each lives in <format>_<isa>.cpp built with that ISA's flags.
#pragma once

#include <cstddef>

namespace sluice::kernels::avx2 {

void quantize_q8_0(const float* src, void* dst, std::size_t n);
void quantize_q8_k(const float* src, void* dst, std::size_t n);
void dequantize_f16(const void* src, float* dst, std::size_t n);
void dequantize_bf16(const void* src, float* dst, std::size_t n);
void dequantize_q8_0(const void* src, float* dst, std::size_t n);
void dequantize_q4_k(const void* src, float* dst, std::size_t n);
void dequantize_q6_k(const void* src, float* dst, std::size_t n);
void dequantize_q4_0(const void* src, float* dst, std::size_t n);
void dequantize_q4_1(const void* src, float* dst, std::size_t n);
void dequantize_q5_0(const void* src, float* dst, std::size_t n);
void dequantize_q5_1(const void* src, float* dst, std::size_t n);
void dequantize_iq4_nl(const void* src, float* dst, std::size_t n);
void dequantize_q5_k(const void* src, float* dst, std::size_t n);
void dequantize_iq4_xs(const void* src, float* dst, std::size_t n);
float dot_f32(std::size_t n, const void* w, const void* act);
float dot_f16(std::size_t n, const void* w, const void* act);
float dot_bf16(std::size_t n, const void* w, const void* act);
float dot_q8_0(std::size_t n, const void* w, const void* act);
float dot_q4_0(std::size_t n, const void* w, const void* act);
float dot_q4_1(std::size_t n, const void* w, const void* act);
float dot_q5_0(std::size_t n, const void* w, const void* act);
float dot_q5_1(std::size_t n, const void* w, const void* act);
float dot_iq4_nl(std::size_t n, const void* w, const void* act);
float dot_q5_k(std::size_t n, const void* w, const void* act);
float dot_iq4_xs(std::size_t n, const void* w, const void* act);
float dot_q4_k(std::size_t n, const void* w, const void* act);
float dot_q6_k(std::size_t n, const void* w, const void* act);
void dot4_q8_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_q6_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_f16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_bf16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dequantize_mxfp4(const void* src, float* dst, std::size_t n);
float dot_mxfp4(std::size_t n, const void* w, const void* act);
void dot4_mxfp4(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dequantize_q2_k(const void* src, float* dst, std::size_t n);
void dequantize_q3_k(const void* src, float* dst, std::size_t n);
float dot_q2_k(std::size_t n, const void* w, const void* act);
float dot_q3_k(std::size_t n, const void* w, const void* act);
void dot4_q2_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_q3_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq2_xxs(std::size_t n, const void* w, const void* act);
void dot4_iq2_xxs(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq2_xs(std::size_t n, const void* w, const void* act);
void dot4_iq2_xs(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq2_s(std::size_t n, const void* w, const void* act);
void dot4_iq2_s(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq3_xxs(std::size_t n, const void* w, const void* act);
void dot4_iq3_xxs(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq3_s(std::size_t n, const void* w, const void* act);
void dot4_iq3_s(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq1_s(std::size_t n, const void* w, const void* act);
void dot4_iq1_s(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq1_m(std::size_t n, const void* w, const void* act);
void dot4_iq1_m(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);

} // namespace sluice::kernels::avx2

namespace sluice::kernels::avx512 {

void dequantize_f16(const void* src, float* dst, std::size_t n);
float dot_f32(std::size_t n, const void* w, const void* act);
float dot_f16(std::size_t n, const void* w, const void* act);
float dot_bf16(std::size_t n, const void* w, const void* act);
float dot_q8_0(std::size_t n, const void* w, const void* act);
float dot_q4_k(std::size_t n, const void* w, const void* act);
float dot_q6_k(std::size_t n, const void* w, const void* act);
float dot_q5_k(std::size_t n, const void* w, const void* act);
void dot4_q6_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_f16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_bf16(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_rows_bf16(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                    std::size_t act_stride, float* out, std::size_t out_stride);
void dot4_rows_f16(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                   std::size_t act_stride, float* out, std::size_t out_stride);
void dot4_q8_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_rows_q8_0(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                    std::size_t act_stride, float* out, std::size_t out_stride);
void dot_rows_q8_0(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act, float* out);
void dot4_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot_few_q4_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, std::size_t n_tokens,
                  float* out);
void dot_rows_q4_k(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act, float* out);
float dot_q4_0(std::size_t n, const void* w, const void* act);
void dot4_q4_0(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_q4_1(std::size_t n, const void* w, const void* act);
float dot_q5_0(std::size_t n, const void* w, const void* act);
float dot_q5_1(std::size_t n, const void* w, const void* act);
float dot_iq4_nl(std::size_t n, const void* w, const void* act);
float dot_iq4_xs(std::size_t n, const void* w, const void* act);
float dot_mxfp4(std::size_t n, const void* w, const void* act);
void dot4_mxfp4(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot_rows_mxfp4(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                    float* out);
void dot4_rows_mxfp4(std::size_t n, const void* w, std::size_t w_stride, std::size_t n_rows, const void* act,
                     std::size_t act_stride, float* out, std::size_t out_stride);
float dot_q2_k(std::size_t n, const void* w, const void* act);
float dot_q3_k(std::size_t n, const void* w, const void* act);
void dot4_q2_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
void dot4_q3_k(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);

float dot_iq2_xxs(std::size_t n, const void* w, const void* act);
void dot4_iq2_xxs(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq2_xs(std::size_t n, const void* w, const void* act);
void dot4_iq2_xs(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq2_s(std::size_t n, const void* w, const void* act);
void dot4_iq2_s(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq3_xxs(std::size_t n, const void* w, const void* act);
void dot4_iq3_xxs(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq3_s(std::size_t n, const void* w, const void* act);
void dot4_iq3_s(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq1_s(std::size_t n, const void* w, const void* act);
void dot4_iq1_s(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);
float dot_iq1_m(std::size_t n, const void* w, const void* act);
void dot4_iq1_m(std::size_t n, const void* w, const void* act, std::size_t act_stride, float* out);

} // namespace sluice::kernels::avx512
