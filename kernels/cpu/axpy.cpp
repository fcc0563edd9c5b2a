// Scalar axpy and the per-ISA choice.
#include "kernels/cpu/axpy.hpp"

#include <algorithm>

namespace sluice::kernels {

void axpy_scalar(std::size_t n, float a, const float* x, float* y) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        y[i] += a * x[i];
    }
}

axpy_fn axpy_kernel(isa_level isa) noexcept {
    switch (std::min(isa, detect_isa())) {
    case isa_level::avx512:
        return axpy_avx512;
    case isa_level::avx2:
        return axpy_avx2;
    case isa_level::scalar:
        break;
    }
    return axpy_scalar;
}

} // namespace sluice::kernels
