// async_event: an event coroutines (or any asio completion token) wait on until another party sets it. The one
// primitive Sluice uses for "wake me when X happened" (a slot freed, experts arrived, a queue filled, children
// ended), instead of timers that never expire and are cancelled as a signal.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>

namespace sluice {

/// A manual-reset event. `set()` latches it and completes every wait; a wait on a set event completes at once
/// (posted, never inline); `reset()` clears the latch; `notify_all()` completes the waits in progress without
/// latching. A wait completes with an empty error_code when the event fired, or with
/// `boost::asio::error::operation_aborted` when its cancellation slot was emitted (any cancellation type) or the
/// event was destroyed. Completions run on each handler's associated executor (default: the event's).
///
/// Thread-safe: set, reset, notify_all and async_wait may be called from any thread. Destroy it only when no
/// party can call it any more; waits still pending then complete with operation_aborted.
class async_event {
public:
    using executor_type = boost::asio::any_io_executor;
    using signature = void(boost::system::error_code);

    explicit async_event(executor_type executor) : state_(std::make_shared<shared_state>(std::move(executor))) {}
    ~async_event() { state_->abort_all(); }
    async_event(const async_event&) = delete;
    async_event& operator=(const async_event&) = delete;

    [[nodiscard]] executor_type get_executor() const noexcept { return state_->executor; }

    /// Latches the event and completes every wait in progress.
    void set() { state_->fire(true); }
    /// Completes every wait in progress; later waits wait for the next set() or notify_all().
    void notify_all() { state_->fire(false); }
    /// Clears the latch.
    void reset() noexcept {
        std::lock_guard lock(state_->mu);
        state_->latched = false;
    }
    [[nodiscard]] bool is_set() const noexcept {
        std::lock_guard lock(state_->mu);
        return state_->latched;
    }

    /// Waits until the event is set (at once when it is) or notified.
    template <class Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_wait(Token&& token = {}) {
        return boost::asio::async_initiate<Token, signature>(
            [state = state_](auto handler) { state->add(std::move(handler)); }, token);
    }

private:
    using handler_type = boost::asio::any_completion_handler<signature>;

    struct waiter {
        handler_type handler;
        std::uint64_t id = 0;
    };

    struct shared_state : std::enable_shared_from_this<shared_state> {
        explicit shared_state(executor_type ex) : executor(std::move(ex)) {}

        executor_type executor;
        mutable std::mutex mu;
        bool latched = false;
        std::uint64_t next_id = 1;
        std::list<waiter> waiters;

        template <class Handler>
        void add(Handler handler) {
            auto slot = boost::asio::get_associated_cancellation_slot(handler);
            std::unique_lock lock(mu);
            if (latched) {
                lock.unlock();
                complete(handler_type(std::move(handler)), {});
                return;
            }
            const std::uint64_t id = next_id++;
            waiters.push_back({handler_type(std::move(handler)), id});
            lock.unlock();
            if (slot.is_connected()) {
                // The slot outlives neither the wait nor this state: the weak pointer covers a destroyed event.
                slot.assign([weak = weak_from_this(), id](boost::asio::cancellation_type) {
                    if (auto self = weak.lock()) {
                        self->cancel(id);
                    }
                });
            }
        }

        void fire(bool latch) {
            std::list<waiter> ready;
            {
                std::lock_guard lock(mu);
                latched = latched || latch;
                ready.swap(waiters);
            }
            for (auto& w : ready) {
                complete(std::move(w.handler), {});
            }
        }

        void cancel(std::uint64_t id) {
            std::list<waiter> gone;
            {
                std::lock_guard lock(mu);
                for (auto it = waiters.begin(); it != waiters.end(); ++it) {
                    if (it->id == id) {
                        gone.splice(gone.begin(), waiters, it);
                        break;
                    }
                }
            }
            for (auto& w : gone) {
                complete(std::move(w.handler), boost::asio::error::operation_aborted);
            }
        }

        void abort_all() {
            std::list<waiter> gone;
            {
                std::lock_guard lock(mu);
                gone.swap(waiters);
            }
            for (auto& w : gone) {
                complete(std::move(w.handler), boost::asio::error::operation_aborted);
            }
        }

        void complete(handler_type handler, boost::system::error_code ec);
    };

    std::shared_ptr<shared_state> state_;
};

} // namespace sluice
