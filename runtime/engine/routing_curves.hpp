// The planner's default routing: how much of a token's cold reads a cache of a given share of all experts still
// reads under learned routing, measured on the routing donors' recordings shipped in bench/routing/ (LRU-2, the
// default policy, with the next layer's prediction read ahead; bench/streaming/routing_curve prints the rows).
// The donors are small models trained on real text with the real models' layers x experts x top-k; their routing
// is somewhat more even than the real models' (docs/PERFORMANCE.md, "Routing workload"), so the curve errs
// towards more reads.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice {

/// A token's expected reads as a share of its cold reads (every chosen expert of every layer read), with a cache
/// of `cache_share` (0..1) of all experts, for a model of `experts` experts per layer choosing `top_k`: the curve of
/// the recording with the same geometry, else the one whose top_k / experts is nearest; linear between the measured
/// shares (2%-95%), from 1 at a cache of none to 0 at a cache of every expert. Above 1 at small caches: predictions
/// read ahead and evicted unused add reads. `source`, when given, gets the recording's name.
double learned_read_share(std::uint32_t experts, std::uint32_t top_k, double cache_share,
                          std::string_view* source = nullptr);

} // namespace sluice
