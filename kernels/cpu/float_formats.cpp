// Scalar reference for the unquantized formats F32, F16 and BF16: conversion and dot against f32 activations.
#include "kernels/cpu/fp16.hpp"
#include "kernels/cpu/scalar_kernels.hpp"

#include <cstdint>
#include <cstring>

namespace sluice::kernels::scalar {

void dequantize_f32(const void* src, float* dst, std::size_t n) {
    std::memcpy(dst, src, n * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, std::size_t n) {
    const auto* h = static_cast<const std::uint16_t*>(src);
    for (std::size_t i = 0; i < n; ++i) {
        dst[i] = fp16_to_f32(h[i]);
    }
}

void dequantize_bf16(const void* src, float* dst, std::size_t n) {
    const auto* h = static_cast<const std::uint16_t*>(src);
    for (std::size_t i = 0; i < n; ++i) {
        dst[i] = bf16_to_f32(h[i]);
    }
}

float dot_f32(std::size_t n, const void* w, const void* act) {
    const auto* a = static_cast<const float*>(w);
    const auto* x = static_cast<const float*>(act);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sum += static_cast<double>(a[i]) * x[i];
    }
    return static_cast<float>(sum);
}

float dot_f16(std::size_t n, const void* w, const void* act) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const auto* x = static_cast<const float*>(act);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sum += static_cast<double>(fp16_to_f32(h[i])) * x[i];
    }
    return static_cast<float>(sum);
}

float dot_bf16(std::size_t n, const void* w, const void* act) {
    const auto* h = static_cast<const std::uint16_t*>(w);
    const auto* x = static_cast<const float*>(act);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sum += static_cast<double>(bf16_to_f32(h[i])) * x[i];
    }
    return static_cast<float>(sum);
}

void quantize_f32(const float* src, void* dst, std::size_t n) {
    std::memcpy(dst, src, n * sizeof(float));
}

void quantize_f16(const float* src, void* dst, std::size_t n) {
    auto* h = static_cast<std::uint16_t*>(dst);
    for (std::size_t i = 0; i < n; ++i) {
        h[i] = f32_to_fp16(src[i]);
    }
}

void quantize_bf16(const float* src, void* dst, std::size_t n) {
    auto* h = static_cast<std::uint16_t*>(dst);
    for (std::size_t i = 0; i < n; ++i) {
        h[i] = f32_to_bf16(src[i]);
    }
}

} // namespace sluice::kernels::scalar
