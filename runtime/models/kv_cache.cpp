// Per-layer cache storage: key/value rows (whole context or a ring of a window) and recurrent state blocks.
#include "runtime/models/kv_cache.hpp"

#include <algorithm>
#include <cassert>

namespace sluice::models {

namespace {

std::size_t elem_bytes(kernels::quant_type type) noexcept { return type == kernels::quant_type::f32 ? 4 : 2; }

/// Whether a layer keeps fewer rows than the context: its oldest positions get overwritten.
bool is_ring(const layer_cache_spec& spec, std::uint32_t rows, std::uint32_t n_ctx) noexcept {
    return spec.window != 0 && rows < n_ctx;
}

} // namespace

std::uint32_t cache_rows(const layer_cache_spec& spec, std::uint32_t n_ctx, std::uint32_t max_batch) noexcept {
    if (spec.window == 0) {
        return n_ctx;
    }
    const std::uint64_t ring = std::uint64_t{spec.window} + std::max<std::uint32_t>(max_batch, 1) - 1;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(ring, n_ctx));
}

std::vector<layer_cache_spec> attention_cache_layout(const model_hparams& hp) {
    return std::vector<layer_cache_spec>(hp.n_layer, layer_cache_spec{hp.kv_dim(), hp.v_dim(), 0, 0});
}

std::uint64_t cache_bytes(std::span<const layer_cache_spec> layout, std::uint32_t n_ctx, kernels::quant_type type,
                          std::uint32_t max_batch) {
    std::uint64_t bytes = 0;
    for (const auto& spec : layout) {
        bytes += std::uint64_t{cache_rows(spec, n_ctx, max_batch)} * (std::uint64_t{spec.k_dim} + spec.v_dim) *
                 elem_bytes(type);
        bytes += spec.state_floats * sizeof(float);
    }
    return bytes;
}

kv_cache::kv_cache(std::span<const layer_cache_spec> layout, std::uint32_t n_ctx, kernels::quant_type type,
                   std::uint32_t max_batch)
    : n_ctx_(n_ctx), type_(type), elem_(elem_bytes(type)), max_append_(std::max<std::uint32_t>(n_ctx, 1)) {
    assert(type == kernels::quant_type::f16 || type == kernels::quant_type::f32);
    std::size_t bytes = 0, floats = 0;
    layers_.reserve(layout.size());
    for (const auto& spec : layout) {
        layer l;
        l.spec = spec;
        l.rows = std::max<std::uint32_t>(cache_rows(spec, n_ctx, max_batch), 1);
        l.k_offset = bytes;
        bytes += std::size_t{l.rows} * spec.k_dim * elem_;
        l.v_offset = bytes;
        bytes += std::size_t{l.rows} * spec.v_dim * elem_;
        l.state_offset = floats;
        floats += spec.state_floats;
        has_state_ = has_state_ || spec.state_floats != 0;
        if (is_ring(spec, l.rows, n_ctx)) {
            has_window_ = true;
            max_append_ = std::min(max_append_, l.rows - std::min(spec.window, l.rows) + 1);
        }
        layers_.push_back(l);
    }
    data_.resize(bytes);
    states_.assign(floats, 0.0f);
}

bool kv_cache::can_truncate(std::uint32_t n) const noexcept {
    if (n == used_ || n == 0) {
        return true;
    }
    if (has_state_ || n > used_) {
        return false;
    }
    // The next position, n, sees the past from n + 1 - window; a ring holds positions from used - rows on.
    for (const auto& l : layers_) {
        if (!is_ring(l.spec, l.rows, n_ctx_)) {
            continue;
        }
        const std::uint32_t needed = n + 1 > l.spec.window ? n + 1 - l.spec.window : 0;
        const std::uint32_t held = used_ > l.rows ? used_ - l.rows : 0;
        if (needed < held) {
            return false;
        }
    }
    return true;
}

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

bool kv_cache::can_copy_prefix(const kv_cache& from, std::uint32_t n) const noexcept {
    if (&from == this || has_state_ || from.has_state_ || has_window_ || from.has_window_ || type_ != from.type_ ||
        n > from.used_ || n > n_ctx_ || layers_.size() != from.layers_.size() ||
        (keeps_hidden() && from.hidden_width_ != hidden_width_)) {
        return false;
    }
    for (std::size_t i = 0; i < layers_.size(); ++i) {
        const auto& a = layers_[i];
        const auto& b = from.layers_[i];
        if (a.rows != b.rows || a.spec.k_dim != b.spec.k_dim || a.spec.v_dim != b.spec.v_dim ||
            a.k_offset != b.k_offset || a.v_offset != b.v_offset) {
            return false;
        }
    }
    return true;
}

void kv_cache::copy_prefix(const kv_cache& from, std::uint32_t n) noexcept {
    assert(can_copy_prefix(from, n));
    for (const auto& l : layers_) {
        const std::size_t k_bytes = std::size_t{n} * l.spec.k_dim * elem_;
        const std::size_t v_bytes = std::size_t{n} * l.spec.v_dim * elem_;
        std::copy_n(from.data_.data() + l.k_offset, k_bytes, data_.data() + l.k_offset);
        std::copy_n(from.data_.data() + l.v_offset, v_bytes, data_.data() + l.v_offset);
    }
    if (keeps_routing() && from.routing_width_ == routing_width_) {
        std::copy_n(from.routing_.data(), std::size_t{n} * routing_width_, routing_.data());
    }
    if (keeps_hidden() && from.hidden_width_ == hidden_width_) {
        std::copy_n(from.hidden_.data(), std::size_t{n} * hidden_width_, hidden_.data());
    }
    used_ = n;
}

void kv_cache::keep_routing(std::uint32_t n_layer, std::uint32_t top_k) {
    routing_width_ = n_layer * top_k;
    routing_.assign(std::size_t{n_ctx_} * routing_width_, std::int16_t{-1});
}

void kv_cache::keep_hidden(std::uint32_t width) {
    hidden_width_ = width;
    hidden_.assign(std::size_t{n_ctx_} * width, 0.0f);
}

} // namespace sluice::models
