// How the forward pass reaches routed-expert weights: pin what is usable now from a compute thread, ask for the
// rest (and a prediction of the next layer's) without waiting, await what is still missing on the io_context,
// unpin when done. `resident_experts` serves weights already in memory; `expert_cache` streams them from disk.
#pragma once

#include "runtime/models/weights.hpp"
#include "sluice/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace sluice::models {

/// Pointers to the weights of a layer's experts, indexed by expert id (valid while pinned).
struct expert_handles {
    std::vector<const void*> gate, up, down;
};

/// Where each chosen expert of a layer stands during a forward pass.
enum class expert_state : std::uint8_t {
    wanted, ///< chosen, not yet usable
    pinned, ///< usable: its handles are set and it cannot be evicted
    done,   ///< computed and released
};

/// Source of routed-expert weights. A forward pass works on one layer at a time: `ids` are the layer's distinct
/// chosen experts and `state` (same length) tracks each. Calls for one forward pass come from one thread at a
/// time, but several forward passes may share a source: everything must be thread-safe.
class expert_source {
public:
    virtual ~expert_source() = default;

    /// Compute thread: pins each wanted expert that is usable now (state -> pinned, handles set in `out`).
    /// Returns how many it pinned.
    virtual std::size_t try_pin(std::uint32_t layer, std::span<const std::int32_t> ids,
                                std::span<expert_state> state, expert_handles& out) = 0;
    /// Compute thread: starts reading the experts of `ids` still wanted and, as a prediction, `next_ids` of
    /// `next_layer`, without waiting. The default does nothing (everything is usable at once).
    virtual void request(std::uint32_t layer, std::span<const std::int32_t> ids, std::span<const expert_state> state,
                         std::uint32_t next_layer, std::span<const std::int32_t> next_ids) {
        (void)layer, (void)ids, (void)state, (void)next_layer, (void)next_ids;
    }
    /// On the io_context: waits until at least one wanted expert of `ids` is usable, reading any that nobody
    /// is reading yet, and pins every wanted one that is usable then. Errors: the read of a wanted expert
    /// failed (nothing stays pinned by this call then), or the operation was cancelled.
    virtual boost::asio::awaitable<result<void>> acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                         std::span<expert_state> state, expert_handles& out) = 0;
    /// Compute thread: unpins every pinned expert of `ids` (state -> done).
    virtual void release(std::uint32_t layer, std::span<const std::int32_t> ids,
                         std::span<expert_state> state) noexcept {
        (void)layer, (void)ids;
        for (auto& s : state) {
            if (s == expert_state::pinned) {
                s = expert_state::done;
            }
        }
    }
    /// Whether `request` uses next-layer predictions (the forward pass computes them only then).
    [[nodiscard]] virtual bool wants_prediction() const noexcept { return false; }
    /// A forward pass starts on `executor`: reads complete there. Called on that executor.
    virtual void attach(const boost::asio::any_io_executor& executor) { (void)executor; }
    /// The forward pass that called `attach` has ended (its io_context may go away once no pass is attached
    /// and no read is in flight). Called on the same executor.
    virtual void detach() noexcept {}
    /// `n` more tokens went through the model (for bytes per token).
    virtual void count_tokens(std::uint64_t n) noexcept { (void)n; }
};

/// Experts held in the model's resident weights: every lookup succeeds at once.
class resident_experts final : public expert_source {
public:
    explicit resident_experts(const model_weights& w) noexcept : weights_(&w) {}
    std::size_t try_pin(std::uint32_t layer, std::span<const std::int32_t> ids, std::span<expert_state> state,
                        expert_handles& out) override;
    boost::asio::awaitable<result<void>> acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                 std::span<expert_state> state, expert_handles& out) override;

private:
    const model_weights* weights_;
};

} // namespace sluice::models
