// io::detail handler ops: read_ops that own an asio completion handler and deliver the outcome to it.
#pragma once

#include "io/detail/read_op.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace sluice::io::detail {

/// Keeps the handler's executor busy while the read runs and posts the outcome to it at the end.
template <class Handler, class Signature_arg>
class handler_holder {
public:
    handler_holder(Handler handler, const boost::asio::any_io_executor& io_executor)
        : handler_(std::move(handler)),
          work_(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler_, io_executor))) {}

    auto cancellation_slot() const noexcept { return boost::asio::get_associated_cancellation_slot(handler_); }

    /// Moves the handler out, lets `release_self` free the owner, then posts `outcome` to the handler.
    template <class Release>
    static void deliver(handler_holder&& holder, Signature_arg&& outcome, Release release_self) {
        if (auto slot = holder.cancellation_slot(); slot.is_connected()) {
            slot.clear();
        }
        Handler handler = std::move(holder.handler_);
        auto work = std::move(holder.work_);
        release_self(); // free our memory before the upcall, as asio asks of composed operations
        boost::asio::post(work.get_executor(), boost::asio::append(std::move(handler), std::move(outcome)));
    }

private:
    Handler handler_;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>> work_;
};

/// A single read owning its completion handler; frees itself when it completes.
template <class Handler>
class handler_read_op final : public read_op {
public:
    handler_read_op(Handler handler, const boost::asio::any_io_executor& io_executor)
        : holder_(std::move(handler), io_executor) {
        on_complete = &handler_read_op::complete;
    }

    auto cancellation_slot() const noexcept { return holder_.cancellation_slot(); }

private:
    static void complete(read_op& base, result<void>&& outcome) {
        auto* self = static_cast<handler_read_op*>(&base);
        holder_type::deliver(std::move(self->holder_), std::move(outcome), [self] { delete self; });
    }

    using holder_type = handler_holder<Handler, result<void>>;
    holder_type holder_;
};

class batch_base;

/// One request of a batch; reports into its batch's result vector.
struct batch_item : read_op {
    batch_base* owner = nullptr;
    std::size_t index = 0;
};

/// The handler-independent part of a batch: the items, their results and the count still running.
class batch_base {
public:
    explicit batch_base(std::size_t n) : items_(n), results_(n), remaining_(n + 1) {
        for (std::size_t i = 0; i < n; ++i) {
            items_[i].owner = this;
            items_[i].index = i;
            items_[i].on_complete = &batch_base::item_complete;
        }
    }
    virtual ~batch_base() = default;
    batch_base(const batch_base&) = delete;
    batch_base& operator=(const batch_base&) = delete;

    std::vector<batch_item>& items() noexcept { return items_; }

    /// Drops the guard count taken at construction; call once every item has been started.
    void release_start_guard() { count_down(); }

protected:
    /// Called once when the last item ends; delivers the results and frees the batch.
    virtual void complete_all() = 0;
    std::vector<result<void>>& results() noexcept { return results_; }

private:
    static void item_complete(read_op& op, result<void>&& outcome) {
        auto& item = static_cast<batch_item&>(op);
        item.owner->results_[item.index] = std::move(outcome);
        item.owner->count_down();
    }
    void count_down() {
        if (--remaining_ == 0) {
            complete_all();
        }
    }

    std::vector<batch_item> items_;
    std::vector<result<void>> results_;
    std::size_t remaining_; // items still running, plus one until every item has been started
};

/// A batch owning its completion handler.
template <class Handler>
class handler_batch_op final : public batch_base {
public:
    handler_batch_op(Handler handler, const boost::asio::any_io_executor& io_executor, std::size_t n)
        : batch_base(n), holder_(std::move(handler), io_executor) {}

    auto cancellation_slot() const noexcept { return holder_.cancellation_slot(); }

private:
    void complete_all() override {
        std::vector<result<void>> outcome = std::move(results());
        holder_type::deliver(std::move(holder_), std::move(outcome), [this] { delete this; });
    }

    using holder_type = handler_holder<Handler, std::vector<result<void>>>;
    holder_type holder_;
};

} // namespace sluice::io::detail
