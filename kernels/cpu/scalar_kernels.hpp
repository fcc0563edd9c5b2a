// Scalar reference kernels of every format: the definition the SIMD paths are tested against.
#pragma once

#include <cstddef>

namespace sluice::kernels::scalar {

// Dequantize `n` values (multiple of the format's block).
void dequantize_f32(const void* src, float* dst, std::size_t n);
void dequantize_f16(const void* src, float* dst, std::size_t n);
void dequantize_bf16(const void* src, float* dst, std::size_t n);
void dequantize_q8_0(const void* src, float* dst, std::size_t n);
void dequantize_q4_0(const void* src, float* dst, std::size_t n);
void dequantize_q4_1(const void* src, float* dst, std::size_t n);
void dequantize_q5_0(const void* src, float* dst, std::size_t n);
void dequantize_q5_1(const void* src, float* dst, std::size_t n);
void dequantize_iq4_nl(const void* src, float* dst, std::size_t n);
void dequantize_mxfp4(const void* src, float* dst, std::size_t n);
void dequantize_q2_k(const void* src, float* dst, std::size_t n);
void dequantize_q3_k(const void* src, float* dst, std::size_t n);
void dequantize_q4_k(const void* src, float* dst, std::size_t n);
void dequantize_q5_k(const void* src, float* dst, std::size_t n);
void dequantize_q6_k(const void* src, float* dst, std::size_t n);
void dequantize_iq4_xs(const void* src, float* dst, std::size_t n);
void dequantize_q8_k(const void* src, float* dst, std::size_t n);
void dequantize_iq2_xxs(const void* src, float* dst, std::size_t n);
void dequantize_iq2_xs(const void* src, float* dst, std::size_t n);
void dequantize_iq2_s(const void* src, float* dst, std::size_t n);
void dequantize_iq3_xxs(const void* src, float* dst, std::size_t n);
void dequantize_iq3_s(const void* src, float* dst, std::size_t n);
void dequantize_iq1_s(const void* src, float* dst, std::size_t n);
void dequantize_iq1_m(const void* src, float* dst, std::size_t n);
void dequantize_tq1_0(const void* src, float* dst, std::size_t n);
void dequantize_tq2_0(const void* src, float* dst, std::size_t n);

// Dot products: float formats take f32 activations; 32-formats (MXFP4 too) take Q8_0; K-formats and the IQ formats of 256 take Q8_K.
float dot_f32(std::size_t n, const void* w, const void* act);
float dot_f16(std::size_t n, const void* w, const void* act);
float dot_bf16(std::size_t n, const void* w, const void* act);
float dot_q8_0(std::size_t n, const void* w, const void* act);
float dot_q4_0(std::size_t n, const void* w, const void* act);
float dot_q4_1(std::size_t n, const void* w, const void* act);
float dot_q5_0(std::size_t n, const void* w, const void* act);
float dot_q5_1(std::size_t n, const void* w, const void* act);
float dot_iq4_nl(std::size_t n, const void* w, const void* act);
float dot_mxfp4(std::size_t n, const void* w, const void* act);
float dot_q2_k(std::size_t n, const void* w, const void* act);
float dot_q3_k(std::size_t n, const void* w, const void* act);
float dot_q4_k(std::size_t n, const void* w, const void* act);
float dot_q5_k(std::size_t n, const void* w, const void* act);
float dot_q6_k(std::size_t n, const void* w, const void* act);
float dot_iq4_xs(std::size_t n, const void* w, const void* act);
float dot_iq2_xxs(std::size_t n, const void* w, const void* act);
float dot_iq2_xs(std::size_t n, const void* w, const void* act);
float dot_iq2_s(std::size_t n, const void* w, const void* act);
float dot_iq3_xxs(std::size_t n, const void* w, const void* act);
float dot_iq3_s(std::size_t n, const void* w, const void* act);
float dot_iq1_s(std::size_t n, const void* w, const void* act);
float dot_iq1_m(std::size_t n, const void* w, const void* act);
float dot_tq1_0(std::size_t n, const void* w, const void* act);
float dot_tq2_0(std::size_t n, const void* w, const void* act);

// Quantizers from float.
void quantize_q8_0(const float* src, void* dst, std::size_t n);
void quantize_q8_k(const float* src, void* dst, std::size_t n);
void quantize_q4_0(const float* src, void* dst, std::size_t n);
void quantize_mxfp4(const float* src, void* dst, std::size_t n);
void quantize_q2_k(const float* src, void* dst, std::size_t n);
void quantize_q3_k(const float* src, void* dst, std::size_t n);
void quantize_q4_k(const float* src, void* dst, std::size_t n);
void quantize_q5_k(const float* src, void* dst, std::size_t n);
void quantize_q6_k(const float* src, void* dst, std::size_t n);
void quantize_f16(const float* src, void* dst, std::size_t n);
void quantize_bf16(const float* src, void* dst, std::size_t n);
void quantize_f32(const float* src, void* dst, std::size_t n);

} // namespace sluice::kernels::scalar
