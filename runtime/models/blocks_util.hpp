// Helpers shared by the decoder blocks: activations prepared once per weight type, row-split products.
#pragma once

#include "kernels/matmul.hpp"
#include "runtime/compute/team.hpp"
#include "runtime/models/forward.hpp"

#include <array>
#include <cstddef>
#include <initializer_list>
#include <vector>

namespace sluice::models::detail {

/// An input (rows of `cols` floats) prepared for each distinct weight type that will multiply it.
struct prepared_input {
    std::array<kernels::quant_type, 4> types{};
    std::array<std::byte*, 4> bufs{};
    std::array<std::size_t, 4> row_bytes{};
    std::size_t n = 0;
    std::size_t cols = 0;

    /// The prepared rows for weights of `type` (which must have been planned).
    [[nodiscard]] const std::byte* get(kernels::quant_type type) const noexcept;
};

/// Plans `slots`' buffers for `rows` rows of `cols` values, one buffer per distinct type of `types`.
/// Never allocates (forward_scratch::size_for sized the buffers), so compute threads may call it.
prepared_input plan_input(prepared_slots& slots, std::initializer_list<kernels::quant_type> types, std::size_t cols,
                          std::size_t rows);

/// Prepares rows [r.begin, r.end) of `src` (row stride `cols`) for every planned type.
void prepare_rows(const prepared_input& in, const float* src, runtime::slice r) noexcept;

/// Member t of n computes its share of rows of y[tok*y_stride + row] = W[row] . in[tok] for `n_tokens` tokens.
void matmul_share(const weight_view& w, const prepared_input& in, std::size_t n_tokens, float* y, std::size_t y_stride,
                  std::size_t t, std::size_t n) noexcept;

} // namespace sluice::models::detail
