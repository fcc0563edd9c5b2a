// The logits reductions' scalar reference and the per-ISA choice.
#include "kernels/logits.hpp"

#include "kernels/cpu/logits_simd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::kernels {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

float max_value_scalar(const float* x, std::size_t n) noexcept {
    float best = neg_inf;
    for (std::size_t i = 0; i < n; ++i) {
        best = x[i] > best ? x[i] : best; // NaN compares false
    }
    return best;
}

double sum_exp_scalar(const float* x, std::size_t n, float shift) noexcept {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        if (x[i] > neg_inf) {
            sum += std::exp(static_cast<double>(x[i]) - shift);
        }
    }
    return sum;
}

} // namespace

float max_value(const float* x, std::size_t n, isa_level isa) noexcept {
    switch (std::min(isa, detect_isa())) {
    case isa_level::avx512:
        return max_value_avx512(x, n);
    case isa_level::avx2:
        return max_value_avx2(x, n);
    case isa_level::scalar:
        break;
    }
    return max_value_scalar(x, n);
}

std::size_t first_argmax(const float* x, std::size_t n, bool& found, isa_level isa) noexcept {
    const float best = max_value(x, n, isa);
    found = best > neg_inf;
    if (!found) {
        return 0;
    }
    return static_cast<std::size_t>(std::find(x, x + n, best) - x);
}

double sum_exp(const float* x, std::size_t n, float shift, isa_level isa) noexcept {
    switch (std::min(isa, detect_isa())) {
    case isa_level::avx512:
        return sum_exp_avx512(x, n, shift);
    case isa_level::avx2:
        return sum_exp_avx2(x, n, shift);
    case isa_level::scalar:
        break;
    }
    return sum_exp_scalar(x, n, shift);
}

} // namespace sluice::kernels
