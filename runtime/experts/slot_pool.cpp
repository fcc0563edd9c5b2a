// Slot memory and the (layer, expert) -> slot index.
#include "runtime/experts/slot_pool.hpp"

#include <algorithm>

namespace sluice::experts {

slot_pool::slot_pool(const expert_layout& layout, std::uint64_t slots) : layout_(&layout) {
    const std::uint64_t n = std::min(slots, layout.total_count);
    memory_ = std::make_shared<io::dma_buffer>(static_cast<std::size_t>(n * layout.slot_bytes));
    memory_->advise_huge_pages();
    memory_->populate(); // the whole budget up front: no page faults (or zeroing) while decoding
    holder_.resize(static_cast<std::size_t>(n));
    empty_.reserve(holder_.size());
    for (std::size_t s = holder_.size(); s-- > 0;) {
        empty_.push_back(static_cast<std::int32_t>(s));
    }
    for (const auto& l : layout.layers) {
        max_experts_ = std::max(max_experts_, l.n_expert);
    }
    index_.assign(layout.layers.size() * max_experts_, none);
}

std::int32_t slot_pool::take_empty() noexcept {
    if (empty_.empty()) {
        return none;
    }
    const auto s = empty_.back();
    empty_.pop_back();
    return s;
}

void slot_pool::assign(std::int32_t s, std::uint32_t layer, std::int32_t expert) noexcept {
    holder_[idx(s)] = {static_cast<std::int32_t>(layer), expert};
    index_[key(layer, expert)] = s;
    ++filled_;
}

void slot_pool::unassign(std::int32_t s) noexcept {
    auto& h = holder_[idx(s)];
    if (h.layer == none) {
        return;
    }
    auto& at = index_[key(static_cast<std::uint32_t>(h.layer), h.expert)];
    if (at == s) {
        at = none;
    }
    h = holding{};
    --filled_;
}

} // namespace sluice::experts
