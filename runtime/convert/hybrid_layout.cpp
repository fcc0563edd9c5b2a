// Row and column orders of the hybrids' GGUF tensors (see hybrid_layout.hpp).
#include "runtime/convert/hybrid_layout.hpp"

#include <cassert>
#include <cmath>

namespace sluice::convert {

std::vector<row_span> tiled_value_rows(const value_heads& v, std::uint64_t offset) {
    std::vector<row_span> out;
    if (offset > 0) {
        out.push_back({0, offset});
    }
    const std::uint64_t heads = v.n_k_heads * v.per_k;
    for (std::uint64_t th = 0; th < heads; ++th) {
        out.push_back({offset + v.grouped_of_tiled(th) * v.head_size, v.head_size});
    }
    return out;
}

std::vector<std::uint64_t> tiled_value_columns(const value_heads& v) {
    std::vector<std::uint64_t> order;
    const std::uint64_t heads = v.n_k_heads * v.per_k;
    order.reserve(heads * v.head_size);
    for (std::uint64_t th = 0; th < heads; ++th) {
        for (std::uint64_t i = 0; i < v.head_size; ++i) {
            order.push_back(v.grouped_of_tiled(th) * v.head_size + i);
        }
    }
    return order;
}

namespace {

/// Rows of part `part` (0 q, 1 k, 2 v, 3 z) of every key head's group in in_proj_qkvz.
void qkvz_part(std::uint64_t n_k_heads, std::uint64_t d, std::uint64_t per_k, int part, std::vector<row_span>& out) {
    const std::uint64_t group = 2 * d + 2 * per_k * d;
    const std::uint64_t starts[] = {0, d, 2 * d, 2 * d + per_k * d};
    const std::uint64_t sizes[] = {d, d, per_k * d, per_k * d};
    for (std::uint64_t g = 0; g < n_k_heads; ++g) {
        out.push_back({g * group + starts[part], sizes[part]});
    }
}

} // namespace

std::vector<row_span> qwen3next_qkv_rows(std::uint64_t n_k_heads, std::uint64_t d, std::uint64_t per_k) {
    std::vector<row_span> out;
    for (int part = 0; part < 3; ++part) {
        qkvz_part(n_k_heads, d, per_k, part, out);
    }
    return out;
}

std::vector<row_span> qwen3next_gate_rows(std::uint64_t n_k_heads, std::uint64_t d, std::uint64_t per_k) {
    std::vector<row_span> out;
    qkvz_part(n_k_heads, d, per_k, 3, out);
    return out;
}

void apply_value_transform(value_transform t, float* values, std::uint64_t n) noexcept {
    switch (t) {
    case value_transform::none:
        return;
    case value_transform::add_one:
        for (std::uint64_t i = 0; i < n; ++i) {
            values[i] += 1.0f;
        }
        return;
    case value_transform::neg_exp:
        for (std::uint64_t i = 0; i < n; ++i) {
            values[i] = -std::exp(values[i]);
        }
        return;
    }
}

void permute_columns(float* data, std::uint64_t rows, std::uint64_t cols, const std::vector<std::uint64_t>& order) {
    assert(order.size() == cols);
    std::vector<float> row(cols);
    for (std::uint64_t r = 0; r < rows; ++r) {
        float* x = data + r * cols;
        row.assign(x, x + cols);
        for (std::uint64_t c = 0; c < cols; ++c) {
            x[c] = row[order[c]];
        }
    }
}

} // namespace sluice::convert
