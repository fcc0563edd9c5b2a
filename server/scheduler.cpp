// Slot leasing and the FIFO wait queue.
#include "server/scheduler.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cassert>

namespace sluice::server {

namespace asio = boost::asio;

slot_lease::~slot_lease() {
    if (owner_ != nullptr) {
        owner_->release(slot_);
    }
}

session& slot_lease::sess() const {
    return *owner_->sessions_[slot_];
}

void scheduler::start(const std::shared_ptr<model>& m, std::uint32_t n_ctx) {
    for (std::size_t i = 0; i < parallel_; ++i) {
        sessions_.push_back(std::make_unique<session>(m, n_ctx));
    }
    busy_.assign(parallel_, false);
}

std::size_t scheduler::busy() const noexcept {
    return static_cast<std::size_t>(std::count(busy_.begin(), busy_.end(), true));
}

std::size_t scheduler::tokens_held() const noexcept {
    std::size_t n = 0;
    for (const auto& s : sessions_) {
        n += s->tokens_in_context();
    }
    return n;
}

asio::awaitable<acquire_result> scheduler::acquire() {
    assert(ready());
    for (std::size_t i = 0; i < busy_.size(); ++i) {
        if (!busy_[i]) {
            busy_[i] = true;
            acquire_result got{slot_lease(*this, i), false};
            co_return got;
        }
    }
    if (queue_.size() >= queue_limit_) {
        co_return acquire_result{std::nullopt, true};
    }
    const auto executor = co_await asio::this_coro::executor;
    waiter w(executor);
    queue_.push_back(&w);
    co_await w.wake.async_wait(asio::as_tuple(asio::use_awaitable));
    if (w.slot) {
        acquire_result got{slot_lease(*this, *w.slot), false}; // release() already dequeued us
        co_return got;
    }
    queue_.erase(std::find(queue_.begin(), queue_.end(), &w));
    co_return acquire_result{};
}

void scheduler::release(std::size_t slot) {
    if (queue_.empty()) {
        busy_[slot] = false;
        return;
    }
    waiter* next = queue_.front();
    queue_.pop_front();
    next->slot = slot; // the slot stays busy: it passes straight to the waiter
    next->wake.set();
}

} // namespace sluice::server
