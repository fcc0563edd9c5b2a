// Resident expert lookups: pointer arithmetic into the loaded 3-D expert tensors.
#include "runtime/models/expert_source.hpp"

namespace sluice::models {

boost::asio::awaitable<result<void>> resident_experts::acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                               expert_handles& out) {
    try_acquire(layer, ids, out);
    co_return result<void>{};
}

bool resident_experts::try_acquire(std::uint32_t layer, std::span<const std::int32_t> ids, expert_handles& out) {
    const auto& l = weights_->layers[layer];
    const auto n = static_cast<std::size_t>(l.gate_exps.n_expert);
    if (out.gate.size() != n) { // sized once; the forward pass pre-sizes them so compute threads never allocate
        out.gate.assign(n, nullptr);
        out.up.assign(n, nullptr);
        out.down.assign(n, nullptr);
    }
    for (const auto id : ids) {
        const auto e = static_cast<std::size_t>(id);
        out.gate[e] = l.gate_exps.data + e * l.gate_exps.expert_bytes();
        out.up[e] = l.up_exps.data + e * l.up_exps.expert_bytes();
        out.down[e] = l.down_exps.data + e * l.down_exps.expert_bytes();
    }
    return true;
}

} // namespace sluice::models
