// Which expert an expert cache evicts: a small interface fed with the router's choices and the slots that can
// be evicted, and `simulate`, which runs a policy over an access trace without a model, so policies can be
// compared on recorded routing alone.
#pragma once

#include "sluice/error.hpp"
#include "sluice/model_options.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::experts {

/// The replacement policies Sluice has (public: sluice::expert_cache_policy).
using cache_policy = sluice::expert_cache_policy;

/// A policy and its parameter: the share of the slots `pin_hot` keeps for the hottest experts.
struct policy_spec {
    cache_policy policy = cache_policy::lru;
    std::uint32_t pin_percent = 50; ///< pin_hot only, 1..99
    friend bool operator==(const policy_spec&, const policy_spec&) = default;
};

/// The names `parse_cache_policy` accepts, for help texts: "lru, lfu, lru-2, layer-quota, pin-hot[:PERCENT]".
inline constexpr std::string_view cache_policy_names = "lru, lfu, lru-2, lru-2-cycle, layer-quota, pin-hot[:PERCENT]";

/// Parses "lru", "lfu", "lru-2", "lru-2-cycle", "layer-quota" or "pin-hot". Errors name the value and the choices.
result<cache_policy> parse_cache_policy(std::string_view name);
/// Parses a policy name, and for pin-hot an optional ":PERCENT" (1..99, default 50): "pin-hot:25".
result<policy_spec> parse_policy_spec(std::string_view text);
/// "lru", "lfu", "lru-2", "layer-quota" or "pin-hot".
std::string_view to_string(cache_policy p) noexcept;
/// The name `parse_policy_spec` reads back: "pin-hot:25", "lru".
std::string to_string(const policy_spec& s);

/// A replacement policy over a fixed number of slots. A slot is evictable from `on_evictable` until `on_pinned`
/// or until `evict` picks it. Not thread-safe: the cache calls it under its lock.
class replacement_policy {
public:
    virtual ~replacement_policy() = default;
    /// The router chose `expert` of `layer` (once per forward step and expert, hit or miss).
    virtual void on_access(std::uint32_t layer, std::int32_t expert) = 0;
    /// `slot` holds `expert` of `layer` and nobody uses it: it may be evicted. `prefetched`: it was read ahead
    /// and nobody chose it yet.
    virtual void on_evictable(std::uint32_t slot, std::uint32_t layer, std::int32_t expert, bool prefetched) = 0;
    /// `slot` is in use again (it must have been evictable).
    virtual void on_pinned(std::uint32_t slot) = 0;
    /// Picks an evictable slot, which stops being evictable; nullopt when none is.
    virtual std::optional<std::uint32_t> evict() = 0;
};

/// A policy of kind `p` for `slots` slots over `layers` layers of at most `max_experts` experts.
std::unique_ptr<replacement_policy> make_policy(cache_policy p, std::uint32_t slots, std::uint32_t layers,
                                                std::uint32_t max_experts);
/// The same with the spec's parameter.
std::unique_ptr<replacement_policy> make_policy(const policy_spec& spec, std::uint32_t slots, std::uint32_t layers,
                                                std::uint32_t max_experts);

/// One router choice of a trace, or (`prefetch`) a read ahead of an expert predicted for a later layer.
struct expert_access {
    std::uint32_t layer = 0;
    std::int32_t expert = 0;
    bool prefetch = false;
};

/// What a policy did over a trace.
struct simulation {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t prefetch_reads = 0;   ///< prefetches of experts not in the cache (each one read)
    std::uint64_t prefetch_used = 0;    ///< prefetched experts later chosen while still cached
    std::uint64_t prefetch_wasted = 0;  ///< prefetched experts evicted before anyone chose them
    std::vector<expert_access> victims; ///< evicted experts, in order
    [[nodiscard]] double hit_rate() const noexcept {
        return hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
    }
};

/// Runs `policy` as the cache of `slots` slots over `trace` (each access is used and released before the next):
/// the hits, misses and victims a cache with that policy would have. A prefetch access reads an expert that is not
/// cached into a slot left evictable as an unused prefetch (the cache's `on_evictable(..., true)`); it is neither
/// a hit nor a miss, and an expert already cached is left alone. With `reads`, the positions in `trace` of the
/// accesses that read from disk (misses that took a slot and prefetch reads) are appended to it, in order.
simulation simulate(replacement_policy& policy, std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts,
                    std::span<const expert_access> trace, std::vector<std::size_t>* reads = nullptr);

} // namespace sluice::experts
