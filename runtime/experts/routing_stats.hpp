// What a routing recording says about the workload it describes, per layer: how concentrated the picks are, how
// often a token reuses the previous token's experts, how well the predictions one and two layers ahead covered the
// choice, and the hit rate of a per-layer LRU cache of a few sizes (replacement_policy's simulate over the recorded
// picks).
#pragma once

#include "runtime/experts/routing_trace.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace sluice::experts {

/// Cache sizes simulated, as fractions of a layer's experts (3, 6, 12.5 and 25%, as published figures use).
inline constexpr std::array<double, 4> routing_cache_fractions = {0.03, 0.06, 0.125, 0.25};

/// One layer's statistics.
struct layer_routing_stats {
    std::uint32_t layer = 0;
    std::uint64_t picks = 0;         ///< expert choices recorded (tokens x top_k)
    double top_share = 0;            ///< the most chosen expert's share of the picks
    double experts_for_90 = 0;       ///< fewest experts holding 90% of the picks, as a fraction of the experts
    double reuse = 0;                ///< mean share of a token's experts the previous token of its sequence chose
    std::uint64_t reuse_pairs = 0;   ///< consecutive token pairs behind `reuse`
    double prediction_recall = 0;    ///< mean share of a token's experts the previous layer predicted
    std::uint64_t predicted = 0;     ///< tokens with a prediction for this layer
    double prediction2_recall = 0;   ///< mean share of a token's experts predicted two layers before (version 2)
    std::uint64_t predicted2 = 0;    ///< tokens with such a prediction for this layer
    std::array<std::uint32_t, routing_cache_fractions.size()> lru_slots{}; ///< slots per simulated cache
    std::array<double, routing_cache_fractions.size()> lru_hit_rate{};   ///< its hit rate
};

/// Statistics of every routed layer of `trace` (layers with no recorded choice are left out).
std::vector<layer_routing_stats> routing_statistics(const routing_trace& trace);

/// The mean of each statistic over `layers` (layer = the count of layers averaged).
layer_routing_stats mean_statistics(const std::vector<layer_routing_stats>& layers);

} // namespace sluice::experts
