// The default source behaviour (nothing to read ahead, nothing to unpin) and resident expert lookups: pointer
// arithmetic into the loaded expert tensors.
#include "runtime/experts/expert_source.hpp"

namespace sluice::experts {

void expert_source::prefetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) {
    batch.reset(batch_purpose::prefetch, layer, ids);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        batch.publish(i, entry_state::ready);
    }
}

void expert_source::prefetch_ahead(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids,
                                   std::uint32_t) {
    prefetch(batch, layer, ids);
}

void expert_source::release(expert_batch& batch, std::size_t i) noexcept { batch.publish(i, entry_state::released); }

void expert_source::release_all(expert_batch& batch) noexcept {
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (batch.state(i) != entry_state::released) {
            release(batch, i);
        }
    }
}

void resident_experts::fetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) {
    batch.reset(batch_purpose::fetch, layer, ids);
    const auto& l = weights_->layers[layer];
    const std::array<const models::weight_view*, max_expert_parts> views{&l.gate_exps,      &l.up_exps,
                                                                         &l.down_exps,      &l.gate_exps_bias,
                                                                         &l.up_exps_bias,   &l.down_exps_bias};
    for (std::size_t i = 0; i < batch.size(); ++i) {
        auto& e = batch.at(i);
        const auto x = static_cast<std::size_t>(e.expert);
        for (std::size_t p = 0; p < max_expert_parts; ++p) {
            const auto& v = *views[p];
            e.parts[p] = v.data ? v.data + x * v.expert_stride : nullptr;
        }
        batch.publish(i, entry_state::ready);
    }
}

} // namespace sluice::experts
