// expert_batch: entry storage, publication, and the wait for progress on the io_context.
#include "runtime/experts/expert_batch.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cassert>

namespace sluice::experts {

void expert_batch::reserve(std::size_t capacity) {
    if (capacity <= capacity_) {
        return;
    }
    assert(outstanding() == 0 && "reserve with entries still held");
    entries_ = std::make_unique<entry[]>(capacity);
    capacity_ = capacity;
    size_ = 0;
}

void expert_batch::bind(const boost::asio::any_io_executor& executor) {
    if (!progress_ || progress_->get_executor() != executor) {
        progress_ = std::make_unique<async_event>(executor);
    }
}

std::size_t expert_batch::outstanding() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < size_; ++i) {
        n += state(i) != entry_state::released;
    }
    return n;
}

std::optional<error> expert_batch::failure() const { return failure_; }

void expert_batch::reset(batch_purpose purpose, std::uint32_t layer, std::span<const std::int32_t> ids) noexcept {
    assert(ids.size() <= capacity_ && "expert_batch::reserve was not called with room for a layer's experts");
    assert(outstanding() == 0 && "the previous request still holds experts");
    purpose_ = purpose;
    layer_ = layer;
    size_ = std::min(ids.size(), capacity_);
    failure_.reset();
    for (std::size_t i = 0; i < size_; ++i) {
        auto& e = entries_[i];
        e.expert = ids[i];
        e.slot = -1;
        e.parts = {};
        e.state.store(entry_state::waiting, std::memory_order_relaxed);
    }
}

void expert_batch::fail(std::size_t i, const error& e) {
    if (!failure_) {
        failure_ = e;
    }
    publish(i, entry_state::failed);
}

void expert_batch::notify() {
    if (progress_) {
        progress_->set();
    }
}

boost::asio::awaitable<result<void>> expert_batch::wait_progress() {
    assert(progress_ && "expert_batch::bind was not called");
    while (true) {
        progress_->reset();
        bool waiting = false;
        for (std::size_t i = 0; i < size_; ++i) {
            const auto s = state(i);
            if (s == entry_state::failed) {
                co_return failure_ ? *failure_ : make_error(std::errc::io_error, "expert read failed");
            }
            if (s == entry_state::ready) {
                co_return result<void>{};
            }
            waiting = waiting || s == entry_state::waiting;
        }
        if (!waiting) {
            co_return result<void>{};
        }
        auto [ec] = co_await progress_->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        if (ec) {
            co_return make_error(std::errc::operation_canceled, "cancelled while reading experts");
        }
    }
}

} // namespace sluice::experts
