// Prepared activations and row-split matrix products for the decoder blocks.
#include "runtime/models/blocks_util.hpp"

#include <cassert>

namespace sluice::models::detail {

const std::byte* prepared_input::get(kernels::quant_type type) const noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        if (types[i] == type) {
            return bufs[i];
        }
    }
    assert(false && "activation not prepared for this weight type");
    return nullptr;
}

prepared_input plan_input(prepared_slots& slots, std::initializer_list<kernels::quant_type> types, std::size_t cols,
                          [[maybe_unused]] std::size_t rows) {
    prepared_input in;
    in.cols = cols;
    for (const auto type : types) {
        bool seen = false;
        for (std::size_t i = 0; i < in.n; ++i) {
            seen = seen || in.types[i] == type;
        }
        if (seen) {
            continue;
        }
        assert(in.n < in.types.size() && in.n < slots.by_type.size());
        const std::size_t rb = kernels::prepared_row_bytes(type, cols);
        auto& buf = slots.by_type[in.n];
        assert(buf.size() >= rb * rows && "forward_scratch::size_for did not plan this input");
        in.types[in.n] = type;
        in.bufs[in.n] = buf.data();
        in.row_bytes[in.n] = rb;
        ++in.n;
    }
    return in;
}

void prepare_rows(const prepared_input& in, const float* src, runtime::slice r) noexcept {
    if (r.size() == 0) {
        return;
    }
    for (std::size_t i = 0; i < in.n; ++i) {
        kernels::prepare_activations(in.types[i], src + r.begin * in.cols, in.cols, r.size(), in.cols,
                                     in.bufs[i] + r.begin * in.row_bytes[i]);
    }
}

void matmul_share(const weight_view& w, const prepared_input& in, std::size_t n_tokens, float* y, std::size_t y_stride,
                  std::size_t t, std::size_t n) noexcept {
    const runtime::slice rows(w.rows, t, n);
    if (rows.size() == 0 || n_tokens == 0) {
        return;
    }
    kernels::matmul_prepared(w.type, w.layout, w.data, w.row_bytes, rows.begin, rows.end, w.cols, in.get(w.type),
                             n_tokens, y, y_stride);
}

} // namespace sluice::models::detail
