// Where each routed expert lies on disk and how big an expert-cache slot is: shared by the expert cache, which
// reads experts into slots, and the memory planner, which sizes the cache. An expert is made of parts (its
// gate, up and down matrices and, for architectures that have them, their biases), each one slab of a tensor
// that stacks every expert of the layer.
#pragma once

#include "runtime/gguf/model_files.hpp"
#include "runtime/models/hparams.hpp"
#include "sluice/error.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace sluice::experts {

/// The parts of one routed expert, in slot order.
enum class expert_part : std::uint8_t { gate, up, down, gate_bias, up_bias, down_bias };
inline constexpr std::size_t max_expert_parts = 6;

/// One part of a layer's experts: expert e's bytes are `bytes` at `offset + e * bytes` of file part `split`.
/// `bytes == 0`: the model has no such part.
struct expert_slab {
    std::uint32_t split = 0;
    std::uint64_t offset = 0; ///< file offset of expert 0
    std::uint64_t bytes = 0;  ///< bytes of one expert (= the stride between experts)
};

/// The slabs of a layer's experts (n_expert == 0 for a layer without routed experts).
struct expert_layer_layout {
    std::array<expert_slab, max_expert_parts> slabs; ///< indexed by expert_part
    std::uint32_t n_expert = 0;
};

/// The routed experts of a model.
struct expert_layout {
    std::vector<expert_layer_layout> layers; ///< one per layer
    /// Bytes of one cache slot: the slabs of the largest layer, each with room to read it as a 4 KiB-aligned
    /// O_DIRECT range (the slab's file offset need not be aligned).
    std::uint64_t slot_bytes = 0;
    /// Bytes read from disk for one expert (the largest layer's aligned ranges).
    std::uint64_t read_bytes = 0;
    std::uint64_t total_bytes = 0; ///< all routed-expert bytes in the files
    std::uint64_t total_count = 0; ///< experts over all layers
    std::uint32_t expert_used = 0; ///< experts chosen per token per layer (hp.n_expert_used)

    /// Bytes of a slab's aligned read range: [offset & ~4095, round_up(offset + bytes, 4096)).
    [[nodiscard]] static std::uint64_t aligned_extent(std::uint64_t offset, std::uint64_t bytes) noexcept;
    /// Bytes a slot reserves for a slab of `slab_bytes`: room for its aligned range from any file offset.
    [[nodiscard]] static std::uint64_t region_bytes(std::uint64_t slab_bytes) noexcept;
    /// Where part `part` of layer `layer` starts inside a slot.
    [[nodiscard]] std::uint64_t region_offset(std::uint32_t layer, std::size_t part) const noexcept;
};

/// The expert layout of `files` for `hp` (empty `layers`/zero sizes for a model without routed experts).
/// Errors: a gate, up or down tensor missing or not 3-D on a MoE layer, a bias whose size does not divide by
/// the expert count.
result<expert_layout> make_expert_layout(const gguf::model_files& files, const models::model_hparams& hp);

} // namespace sluice::experts
