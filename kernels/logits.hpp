// Reductions over one row of logits (the sampler's log-softmax): the largest value, its first index and the sum of
// exponentials, vectorised per ISA with a scalar reference.
#pragma once

#include "kernels/isa.hpp"

#include <cstddef>

namespace sluice::kernels {

/// The largest of `n` values, NaN ignored; -inf when every value is -inf or NaN (or n == 0).
[[nodiscard]] float max_value(const float* x, std::size_t n, isa_level isa = active_isa()) noexcept;

/// The first index whose value is the largest (max_value), NaN never chosen; 0 when every value is -inf or NaN.
/// `found` tells whether some value is > -inf.
[[nodiscard]] std::size_t first_argmax(const float* x, std::size_t n, bool& found,
                                       isa_level isa = active_isa()) noexcept;

/// sum over i of exp(x[i] - shift), in double, skipping -inf and NaN values. `shift` must be finite and at least every
/// value (the row's max_value), so no term exceeds 1. The vector levels compute each term in float (relative error
/// below 2e-7) and add them in double: the result is within 1e-6 relative of the scalar reference's (double exp).
[[nodiscard]] double sum_exp(const float* x, std::size_t n, float shift, isa_level isa = active_isa()) noexcept;

} // namespace sluice::kernels
