// Resident expert lookups: pointer arithmetic into the loaded 3-D expert tensors.
#include "runtime/models/expert_source.hpp"

namespace sluice::models {

std::size_t resident_experts::try_pin(std::uint32_t layer, std::span<const std::int32_t> ids,
                                      std::span<expert_state> state, expert_handles& out) {
    const auto& l = weights_->layers[layer];
    const auto n = static_cast<std::size_t>(l.gate_exps.n_expert);
    if (out.gate.size() != n) { // sized once; the forward pass pre-sizes them so compute threads never allocate
        out.gate.assign(n, nullptr);
        out.up.assign(n, nullptr);
        out.down.assign(n, nullptr);
    }
    std::size_t pinned = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (state[i] != expert_state::wanted) {
            continue;
        }
        const auto e = static_cast<std::size_t>(ids[i]);
        out.gate[e] = l.gate_exps.data + e * l.gate_exps.expert_bytes();
        out.up[e] = l.up_exps.data + e * l.up_exps.expert_bytes();
        out.down[e] = l.down_exps.data + e * l.down_exps.expert_bytes();
        state[i] = expert_state::pinned;
        ++pinned;
    }
    return pinned;
}

boost::asio::awaitable<result<void>> resident_experts::acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                               std::span<expert_state> state, expert_handles& out) {
    try_pin(layer, ids, state, out);
    co_return result<void>{};
}

} // namespace sluice::models
