// expert_batch: the handle of one request for a layer's experts, the chosen ones of a forward step (a fetch)
// or a prediction read ahead (a prefetch). Compute threads test its entries without a lock; a coroutine awaits
// it on the io_context until more of them have arrived.
#pragma once

#include "base/async_event.hpp"
#include "runtime/experts/expert_layout.hpp"
#include "sluice/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace sluice::experts {

/// Where one expert of a batch stands.
enum class entry_state : std::uint8_t {
    waiting,  ///< not usable yet: waiting for a slot, or being read
    ready,    ///< usable (fetch: its parts are in memory until released; prefetch: its read ended)
    failed,   ///< its read failed (expert_batch::failure() says why)
    released, ///< handed back to the source
};

/// What a batch was asked for.
enum class batch_purpose : std::uint8_t {
    fetch,    ///< the experts a step computes: ready entries stay in memory until released
    prefetch, ///< a prediction: read ahead, not held; a later fetch finds them
};

/// One layer's experts asked of an expert_source. The caller owns it and reuses it layer after layer: `reset`
/// (done by the source's fetch/prefetch) starts a request, and every entry must be released before the next.
///
/// Threads: the source writes entries under its own lock and publishes each state with a release store; any
/// thread may read `state` (acquire) without a lock, and `part` once it read `ready`. The entry list itself
/// (size, ids) changes only in the source's fetch/prefetch, called by the one thread that owns the batch.
class expert_batch {
public:
    /// Room for `capacity` experts (at least a layer's expert count); allocates, so call it before compute.
    void reserve(std::size_t capacity);
    /// Binds the wake-up event to `executor` (the io_context the forward pass awaits on).
    void bind(const boost::asio::any_io_executor& executor);

    [[nodiscard]] batch_purpose purpose() const noexcept { return purpose_; }
    [[nodiscard]] std::uint32_t layer() const noexcept { return layer_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::int32_t expert(std::size_t i) const noexcept { return entries_[i].expert; }
    [[nodiscard]] entry_state state(std::size_t i) const noexcept {
        return entries_[i].state.load(std::memory_order_acquire);
    }
    [[nodiscard]] bool ready(std::size_t i) const noexcept { return state(i) == entry_state::ready; }
    /// A part of a ready fetched expert (null for a part the model does not have).
    [[nodiscard]] const std::byte* part(std::size_t i, expert_part p) const noexcept {
        return entries_[i].parts[static_cast<std::size_t>(p)];
    }
    /// Entries not released yet.
    [[nodiscard]] std::size_t outstanding() const noexcept;
    /// The first read failure of this request, if any.
    [[nodiscard]] std::optional<error> failure() const;

    /// On the bound executor, with no compute running on the batch: completes when some entry is ready and not
    /// released, or failed, or when nothing is waiting any more. Errors: a failed read (the source's message),
    /// or cancellation of the awaiting coroutine.
    boost::asio::awaitable<result<void>> wait_progress();

    // For expert sources.

    /// One expert's bookkeeping. Sources write it under their lock.
    struct entry {
        std::int32_t expert = -1;
        std::atomic<entry_state> state{entry_state::released};
        std::int32_t slot = -1; ///< the source's own reference (a cache slot), -1 for none
        std::array<const std::byte*, max_expert_parts> parts{};
    };
    /// Starts a request for `ids` of `layer`; every entry waiting. The previous request must be fully released.
    void reset(batch_purpose purpose, std::uint32_t layer, std::span<const std::int32_t> ids) noexcept;
    [[nodiscard]] entry& at(std::size_t i) noexcept { return entries_[i]; }
    /// Publishes entry i's new state (release store).
    void publish(std::size_t i, entry_state s) noexcept { entries_[i].state.store(s, std::memory_order_release); }
    /// Records a read failure (the first one is kept) and marks entry i failed.
    void fail(std::size_t i, const error& e);
    /// Wakes a coroutine in wait_progress (call after publishing).
    void notify();

private:
    std::unique_ptr<entry[]> entries_;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
    std::uint32_t layer_ = 0;
    batch_purpose purpose_ = batch_purpose::fetch;
    std::optional<error> failure_; ///< written under the source's lock, read once no read is outstanding
    std::unique_ptr<async_event> progress_;
};

} // namespace sluice::experts
