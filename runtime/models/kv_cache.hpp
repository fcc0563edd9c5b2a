// Per-sequence cache of a model's layers: for each layer what its architecture keeps between forward passes.
// An attention layer keeps the keys and values of every position (F16 by default, F32 on request), or only
// the last `window` positions in a ring; a recurrent layer keeps a state block of floats; a layer may keep both
// or neither. The architecture declares the layout (architecture::cache_layout).
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/models/hparams.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::models {

/// What one layer keeps per sequence.
struct layer_cache_spec {
    std::uint32_t k_dim = 0;        ///< elements of one position's key row (0: no keys or values)
    std::uint32_t v_dim = 0;        ///< elements of one position's value row (0: none, e.g. a latent kept in keys)
    std::uint32_t window = 0;       ///< positions a token sees, its own included (0: the whole context); the rows
                                    ///< form a ring of window + max_batch - 1 (see kv_cache)
    std::uint64_t state_floats = 0; ///< a recurrent state block carried from position to position
};

/// The layout of a standard attention decoder: every layer keeps kv_dim keys and v_dim values per position.
std::vector<layer_cache_spec> attention_cache_layout(const model_hparams& hp);

/// Rows a layer of `spec` keeps in a cache of `n_ctx` positions appended `max_batch` at a time: n_ctx, or for a
/// window the ring of window + max_batch - 1 rows (at most n_ctx), so the positions a batch writes never overwrite
/// one its first token still sees.
std::uint32_t cache_rows(const layer_cache_spec& spec, std::uint32_t n_ctx, std::uint32_t max_batch) noexcept;

/// Bytes a cache of `layout` with `n_ctx` positions holds for element type `type` (F16 or F32).
std::uint64_t cache_bytes(std::span<const layer_cache_spec> layout, std::uint32_t n_ctx, kernels::quant_type type,
                          std::uint32_t max_batch = 1);

/// The cache of one sequence. `size()` positions are filled; a forward pass appends after them.
/// Not thread-safe: one forward pass at a time per cache.
class kv_cache {
public:
    /// `type` is F16 (half the memory; what generation uses) or F32 (exact keys, for fidelity checks).
    /// `max_batch`: the positions a forward pass appends at once (its batch; forward_runner's default is 256),
    /// which windowed rings make room for.
    kv_cache(std::span<const layer_cache_spec> layout, std::uint32_t n_ctx,
             kernels::quant_type type = kernels::quant_type::f16, std::uint32_t max_batch = 256);

    [[nodiscard]] std::uint32_t capacity() const noexcept { return n_ctx_; }
    [[nodiscard]] std::uint32_t size() const noexcept { return used_; }
    [[nodiscard]] kernels::quant_type type() const noexcept { return type_; }
    [[nodiscard]] std::uint32_t layers() const noexcept { return static_cast<std::uint32_t>(layers_.size()); }
    [[nodiscard]] const layer_cache_spec& spec(std::uint32_t layer) const noexcept { return layers_[layer].spec; }

    /// Whether the cache can go back to its first `n` positions: always for n == size() or 0; otherwise not
    /// when a layer keeps a recurrent state, and for a ring only while it still holds the window before n.
    [[nodiscard]] bool can_truncate(std::uint32_t n) const noexcept;
    /// The most positions one forward batch may append: what every ring has room for (rows - window + 1).
    [[nodiscard]] std::uint32_t max_append() const noexcept { return max_append_; }
    /// Keeps the first `n` positions (n <= size(), can_truncate(n)), e.g. to reuse a shared prompt prefix.
    /// Truncating to 0 also clears every recurrent state.
    void truncate(std::uint32_t n) noexcept;
    /// Marks `n` more positions filled (called by the forward pass after writing them).
    void advance(std::uint32_t n) noexcept { used_ += n; }

    /// Layer `layer`'s key rows; row r (a position, or position % window) starts r * spec.k_dim elements in.
    [[nodiscard]] std::byte* keys(std::uint32_t layer) noexcept { return data_.data() + layers_[layer].k_offset; }
    [[nodiscard]] std::byte* values(std::uint32_t layer) noexcept { return data_.data() + layers_[layer].v_offset; }
    /// Rows layer `layer` keeps (n_ctx, or its window).
    [[nodiscard]] std::uint32_t rows(std::uint32_t layer) const noexcept { return layers_[layer].rows; }
    /// Where position `pos` lives in a layer's keys or values (its ring row for a windowed layer).
    [[nodiscard]] std::byte* key_row(std::uint32_t layer, std::size_t pos) noexcept {
        return keys(layer) + (pos % layers_[layer].rows) * layers_[layer].spec.k_dim * elem_;
    }
    [[nodiscard]] std::byte* value_row(std::uint32_t layer, std::size_t pos) noexcept {
        return values(layer) + (pos % layers_[layer].rows) * layers_[layer].spec.v_dim * elem_;
    }
    /// Whether copy_prefix(from, n) may be used: the same layers, rows and element type, no recurrent state and no
    /// ring shorter than the context on either side, n <= from.size(), and `from` keeps hidden states when this does.
    [[nodiscard]] bool can_copy_prefix(const kv_cache& from, std::uint32_t n) const noexcept;
    /// Makes this cache hold `from`'s first `n` positions (another sequence's cached prompt prefix): copies their
    /// key and value rows of every layer, and their hidden states when both keep them. Requires
    /// can_copy_prefix(from, n).
    void copy_prefix(const kv_cache& from, std::uint32_t n) noexcept;
    /// Whether some layer keeps a recurrent state (its past can only be recovered from a saved copy).
    [[nodiscard]] bool has_state() const noexcept { return has_state_; }
    /// Every layer's recurrent state, back to back (what a state checkpoint saves).
    [[nodiscard]] std::span<const float> states() const noexcept { return states_; }
    /// Whether restore() may be used: no layer keeps a ring shorter than the context (its old rows get overwritten).
    [[nodiscard]] bool can_restore() const noexcept { return !has_window_; }
    /// Goes back to position `n` (n <= size()) with `saved`, a states() copy taken when the cache held n positions:
    /// key/value rows past n are dropped, the recurrent states become what they were at n. Requires can_restore().
    void restore(std::uint32_t n, std::span<const float> saved) noexcept;
    /// Layer `layer`'s recurrent state (spec.state_floats floats; zero after construction and truncate(0)).
    [[nodiscard]] float* state(std::uint32_t layer) noexcept { return states_.data() + layers_[layer].state_offset; }
    /// Bytes held.
    [[nodiscard]] std::size_t bytes() const noexcept {
        return data_.size() + (states_.size() + hidden_.size()) * sizeof(float) +
               routing_.size() * sizeof(std::int16_t);
    }

    /// Also keeps each position's last hidden state (the residual stream after the last layer, before the output
    /// norm: `width` floats a position), which forward passes write; what a multi-token-prediction block drafts
    /// from. Call before the first forward pass.
    void keep_hidden(std::uint32_t width);
    /// Whether keep_hidden() was called.
    [[nodiscard]] bool keeps_hidden() const noexcept { return hidden_width_ != 0; }
    [[nodiscard]] std::uint32_t hidden_width() const noexcept { return hidden_width_; }
    /// Position `pos`'s hidden state (keeps_hidden(), pos < capacity(); valid for pos < size()).
    [[nodiscard]] float* hidden_row(std::size_t pos) noexcept { return hidden_.data() + pos * hidden_width_; }
    [[nodiscard]] const float* hidden_row(std::size_t pos) const noexcept {
        return hidden_.data() + pos * hidden_width_;
    }

    /// Also keeps the routed experts each position chose in every layer (`n_layer` x `top_k` ids a position, -1 in
    /// dense layers), which MoE blocks write: what draft-guided prefetch predicts a drafted token's experts from.
    /// Call before the first forward pass.
    void keep_routing(std::uint32_t n_layer, std::uint32_t top_k);
    [[nodiscard]] bool keeps_routing() const noexcept { return routing_width_ != 0; }
    /// Position `pos`'s choices, layer by layer (keeps_routing(), pos < capacity(); valid for pos < size()).
    [[nodiscard]] std::int16_t* routing_row(std::size_t pos) noexcept { return routing_.data() + pos * routing_width_; }
    [[nodiscard]] const std::int16_t* routing_row(std::size_t pos) const noexcept {
        return routing_.data() + pos * routing_width_;
    }

private:
    struct layer {
        layer_cache_spec spec;
        std::uint32_t rows = 0;
        std::size_t k_offset = 0, v_offset = 0; ///< bytes into data_
        std::size_t state_offset = 0;          ///< floats into states_
    };
    std::uint32_t n_ctx_ = 0;
    std::uint32_t used_ = 0;
    kernels::quant_type type_;
    std::size_t elem_ = 2;
    bool has_state_ = false;       ///< some layer keeps a recurrent state
    bool has_window_ = false;      ///< some layer keeps a ring shorter than the context
    std::uint32_t max_append_ = 0; ///< see max_append()
    std::vector<layer> layers_;
    std::vector<std::byte> data_;
    std::vector<float> states_;
    std::uint32_t hidden_width_ = 0;
    std::vector<float> hidden_; ///< [n_ctx][hidden_width_] when keeps_hidden()
    std::uint32_t routing_width_ = 0;
    std::vector<std::int16_t> routing_; ///< [n_ctx][n_layer * top_k] when keeps_routing()
};

} // namespace sluice::models
