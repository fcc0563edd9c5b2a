// The expert cache's memory: a fixed pool of slots allocated and faulted in once, each able to hold one expert
// of any layer (every part at its offset inside the slot), the index from (layer, expert) to the slot holding
// it, and the list of empty slots. It knows nothing of reads, pins or replacement.
#pragma once

#include "io/dma_buffer.hpp"
#include "runtime/experts/expert_layout.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace sluice::experts {

/// Slots of `layout.slot_bytes` bytes. Not thread-safe: the cache calls it under its lock.
class slot_pool {
public:
    static constexpr std::int32_t none = -1;

    /// Allocates min(slots, layout.total_count) slots and touches every page (no faults while decoding).
    slot_pool(const expert_layout& layout, std::uint64_t slots);

    [[nodiscard]] std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(holder_.size()); }
    [[nodiscard]] std::uint32_t layers() const noexcept { return static_cast<std::uint32_t>(layout_->layers.size()); }
    [[nodiscard]] std::uint32_t max_experts() const noexcept { return max_experts_; }
    [[nodiscard]] std::uint64_t filled() const noexcept { return filled_; }

    /// The slot holding (or being filled with) `expert` of `layer`, or none.
    [[nodiscard]] std::int32_t find(std::uint32_t layer, std::int32_t expert) const noexcept {
        return index_[key(layer, expert)];
    }
    /// An empty slot, taken off the empty list; none when every slot holds an expert.
    std::int32_t take_empty() noexcept;
    /// Makes slot `s` the one holding `expert` of `layer`.
    void assign(std::int32_t s, std::uint32_t layer, std::int32_t expert) noexcept;
    /// Forgets what slot `s` holds (it stays out of the empty list: see give_back).
    void unassign(std::int32_t s) noexcept;
    /// Puts an unassigned slot back on the empty list.
    void give_back(std::int32_t s) noexcept { empty_.push_back(s); }
    /// What slot `s` holds: (layer, expert), layer -1 when nothing.
    [[nodiscard]] std::int32_t layer_of(std::int32_t s) const noexcept { return holder_[idx(s)].layer; }
    [[nodiscard]] std::int32_t expert_of(std::int32_t s) const noexcept { return holder_[idx(s)].expert; }

    /// Where part `part` of an expert of `layer` goes inside slot `s` (room for its 4 KiB-aligned range).
    [[nodiscard]] std::byte* region(std::int32_t s, std::uint32_t layer, std::size_t part) noexcept {
        return memory_->data() + idx(s) * layout_->slot_bytes + layout_->region_offset(layer, part);
    }
    /// The slot memory's owner, for whoever must keep it alive past the pool (reads the kernel has not finished).
    [[nodiscard]] std::shared_ptr<const void> memory_owner() const noexcept { return memory_; }

private:
    struct holding {
        std::int32_t layer = none, expert = none;
    };
    static std::size_t idx(std::int32_t s) noexcept { return static_cast<std::size_t>(s); }
    [[nodiscard]] std::size_t key(std::uint32_t layer, std::int32_t expert) const noexcept {
        return std::size_t{layer} * max_experts_ + static_cast<std::size_t>(expert);
    }

    const expert_layout* layout_;
    std::shared_ptr<io::dma_buffer> memory_;
    std::vector<holding> holder_;
    std::vector<std::int32_t> index_; ///< [layer * max_experts + expert] -> slot or none
    std::vector<std::int32_t> empty_;
    std::uint32_t max_experts_ = 0;
    std::uint64_t filled_ = 0;
};

} // namespace sluice::experts
