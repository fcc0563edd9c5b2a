// Per-sequence key/value cache, F16 by default (F32 on request): for every layer, keys and values of each
// position.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/models/hparams.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::models {

/// Keys and values of one sequence. Layer l's keys are n_ctx rows of kv_dim elements (position-major), the
/// values likewise with v_dim. `size()` positions are filled; a forward pass appends after them.
/// Not thread-safe: one forward pass at a time per cache.
class kv_cache {
public:
    /// `type` is F16 (half the memory; what generation uses) or F32 (exact keys, for fidelity checks).
    kv_cache(const model_hparams& hp, std::uint32_t n_ctx, kernels::quant_type type = kernels::quant_type::f16);

    [[nodiscard]] std::uint32_t capacity() const noexcept { return n_ctx_; }
    [[nodiscard]] std::uint32_t size() const noexcept { return used_; }
    [[nodiscard]] kernels::quant_type type() const noexcept { return type_; }
    /// Keeps the first `n` positions (n <= size()), e.g. to reuse a shared prompt prefix.
    void truncate(std::uint32_t n) noexcept { used_ = n < used_ ? n : used_; }
    /// Marks `n` more positions filled (called by the forward pass after writing them).
    void advance(std::uint32_t n) noexcept { used_ += n; }

    /// Layer `layer`'s keys; the row of position p starts p * k_row() elements in.
    [[nodiscard]] std::byte* keys(std::uint32_t layer) noexcept { return k_.data() + layer * layer_k_ * elem_; }
    [[nodiscard]] std::byte* values(std::uint32_t layer) noexcept { return v_.data() + layer * layer_v_ * elem_; }
    /// Address of position `pos` in a layer's keys or values.
    [[nodiscard]] std::byte* key_row(std::uint32_t layer, std::size_t pos) noexcept {
        return keys(layer) + pos * k_dim_ * elem_;
    }
    [[nodiscard]] std::byte* value_row(std::uint32_t layer, std::size_t pos) noexcept {
        return values(layer) + pos * v_dim_ * elem_;
    }
    [[nodiscard]] std::size_t k_row() const noexcept { return k_dim_; }
    [[nodiscard]] std::size_t v_row() const noexcept { return v_dim_; }
    /// Bytes held.
    [[nodiscard]] std::size_t bytes() const noexcept { return k_.size() + v_.size(); }

private:
    std::uint32_t n_ctx_ = 0;
    std::uint32_t used_ = 0;
    kernels::quant_type type_;
    std::size_t elem_ = 2;
    std::size_t k_dim_ = 0, v_dim_ = 0;
    std::size_t layer_k_ = 0, layer_v_ = 0;
    std::vector<std::byte> k_, v_;
};

} // namespace sluice::models
