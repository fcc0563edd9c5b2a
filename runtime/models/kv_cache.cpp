// Per-layer cache storage: key/value rows (whole context or a ring of a window) and recurrent state blocks.
#include "runtime/models/kv_cache.hpp"

#include <algorithm>
#include <cassert>

namespace sluice::models {

namespace {

std::size_t elem_bytes(kernels::quant_type type) noexcept { return type == kernels::quant_type::f32 ? 4 : 2; }

std::uint32_t rows_of(const layer_cache_spec& spec, std::uint32_t n_ctx) noexcept {
    return spec.window ? std::min(spec.window, n_ctx) : n_ctx;
}

} // namespace

std::vector<layer_cache_spec> attention_cache_layout(const model_hparams& hp) {
    return std::vector<layer_cache_spec>(hp.n_layer, layer_cache_spec{hp.kv_dim(), hp.v_dim(), 0, 0});
}

std::uint64_t cache_bytes(std::span<const layer_cache_spec> layout, std::uint32_t n_ctx, kernels::quant_type type) {
    std::uint64_t bytes = 0;
    for (const auto& spec : layout) {
        bytes += std::uint64_t{rows_of(spec, n_ctx)} * (std::uint64_t{spec.k_dim} + spec.v_dim) * elem_bytes(type);
        bytes += spec.state_floats * sizeof(float);
    }
    return bytes;
}

kv_cache::kv_cache(std::span<const layer_cache_spec> layout, std::uint32_t n_ctx, kernels::quant_type type)
    : n_ctx_(n_ctx), type_(type), elem_(elem_bytes(type)) {
    assert(type == kernels::quant_type::f16 || type == kernels::quant_type::f32);
    std::size_t bytes = 0, floats = 0;
    layers_.reserve(layout.size());
    for (const auto& spec : layout) {
        layer l;
        l.spec = spec;
        l.rows = std::max<std::uint32_t>(rows_of(spec, n_ctx), 1);
        l.k_offset = bytes;
        bytes += std::size_t{l.rows} * spec.k_dim * elem_;
        l.v_offset = bytes;
        bytes += std::size_t{l.rows} * spec.v_dim * elem_;
        l.state_offset = floats;
        floats += spec.state_floats;
        past_is_lossy_ = past_is_lossy_ || (spec.window != 0 && spec.window < n_ctx) || spec.state_floats != 0;
        has_window_ = has_window_ || (spec.window != 0 && spec.window < n_ctx);
        layers_.push_back(l);
    }
    data_.resize(bytes);
    states_.assign(floats, 0.0f);
}

bool kv_cache::can_truncate(std::uint32_t n) const noexcept { return n == used_ || n == 0 || !past_is_lossy_; }

void kv_cache::truncate(std::uint32_t n) noexcept {
    assert(can_truncate(n));
    used_ = std::min(n, used_);
    if (used_ == 0) {
        std::fill(states_.begin(), states_.end(), 0.0f);
    }
}

void kv_cache::restore(std::uint32_t n, std::span<const float> saved) noexcept {
    assert(can_restore() && n <= used_ && saved.size() == states_.size());
    used_ = n;
    std::copy(saved.begin(), saved.end(), states_.begin());
}

} // namespace sluice::models
