// Generation slots: at most `parallel` generations run at once, each on its own session; requests beyond that
// wait in a bounded FIFO queue. Single-threaded: every member is used from the io_context's one thread.
#pragma once

#include "base/async_event.hpp"
#include "runtime/engine/session.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::server {

class scheduler;

/// A held slot; releasing it (destruction) hands it to the oldest waiter. Move-only.
class slot_lease {
public:
    slot_lease(scheduler& owner, std::size_t slot) : owner_(&owner), slot_(slot) {}
    slot_lease(slot_lease&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), slot_(other.slot_) {}
    slot_lease& operator=(slot_lease&&) = delete;
    ~slot_lease();

    /// The slot's session (its KV cache is reused across the slot's requests).
    [[nodiscard]] session& sess() const;
    [[nodiscard]] std::size_t index() const noexcept { return slot_; }

private:
    scheduler* owner_;
    std::size_t slot_;
};

/// What acquire() gives: a lease, or none because the queue was full or the wait was cancelled.
struct acquire_result {
    std::optional<slot_lease> lease;
    bool queue_full = false;
};

class scheduler {
public:
    scheduler(std::size_t parallel, std::size_t queue_limit) : parallel_(parallel), queue_limit_(queue_limit) {}

    /// Creates the sessions once the model is loaded (`n_ctx` 0: the model's default).
    void start(const std::shared_ptr<model>& m, std::uint32_t n_ctx);
    [[nodiscard]] bool ready() const noexcept { return !sessions_.empty(); }

    /// A free slot at once, or a place in the queue (FIFO) until one frees up; `queue_full` when the queue is
    /// at its limit. A cancelled wait (the client went away) leaves the queue and returns no lease.
    boost::asio::awaitable<acquire_result> acquire();

    /// A session for prompt rendering and token counting (shared; never generate with it).
    [[nodiscard]] const session& any_session() const { return *sessions_.front(); }
    [[nodiscard]] std::size_t busy() const noexcept;
    [[nodiscard]] std::size_t queued() const noexcept { return queue_.size(); }
    [[nodiscard]] std::size_t parallel() const noexcept { return parallel_; }
    /// Tokens held in the KV caches of all slots' sessions.
    [[nodiscard]] std::size_t tokens_held() const noexcept;

private:
    friend class slot_lease;
    struct waiter {
        explicit waiter(const boost::asio::any_io_executor& ex) : wake(ex) {}
        async_event wake;
        std::optional<std::size_t> slot; ///< set by release() before it sets `wake`
    };
    void release(std::size_t slot);

    std::size_t parallel_;
    std::size_t queue_limit_;
    std::vector<std::unique_ptr<session>> sessions_;
    std::vector<bool> busy_;
    std::deque<waiter*> queue_;
};

} // namespace sluice::server
