// How the forward pass reaches routed-expert weights: an awaitable lookup per layer, so an expert cache
// streaming from disk can stand behind it. `resident_experts` serves weights already in memory.
#pragma once

#include "io/error.hpp"
#include "runtime/models/weights.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace sluice::models {

/// Pointers to the weights of a layer's experts, indexed by expert id (null unless acquired).
struct expert_handles {
    std::vector<const void*> gate, up, down;
};

/// Source of routed-expert weights.
class expert_source {
public:
    virtual ~expert_source() = default;
    /// Makes experts `ids` (distinct) of `layer` usable: sets out.gate/up/down[id] for each. The weights stay
    /// valid until `release(layer)`. Runs on the caller's executor; may suspend while weights are read.
    virtual boost::asio::awaitable<result<void>> acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                         expert_handles& out) = 0;
    /// Synchronous fast path, called from a compute thread: fills `out` and returns true when experts `ids`
    /// of `layer` are usable right now without waiting (resident, or already cached). False sends the forward
    /// pass back to the io_context to `acquire` them. Must be thread-safe with respect to `acquire`.
    virtual bool try_acquire(std::uint32_t layer, std::span<const std::int32_t> ids, expert_handles& out) {
        (void)layer;
        (void)ids;
        (void)out;
        return false;
    }
    /// The forward pass is done with `layer`'s experts (a cache may now evict them).
    virtual void release(std::uint32_t layer) noexcept { (void)layer; }
};

/// Experts held in the model's resident weights: lookups complete at once.
class resident_experts final : public expert_source {
public:
    explicit resident_experts(const model_weights& w) noexcept : weights_(&w) {}
    boost::asio::awaitable<result<void>> acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                 expert_handles& out) override;
    bool try_acquire(std::uint32_t layer, std::span<const std::int32_t> ids, expert_handles& out) override;

private:
    const model_weights* weights_;
};

} // namespace sluice::models
