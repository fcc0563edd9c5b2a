// The backend-independent half of io::reader: alignment, short reads, retries, EOF, errors and completion.
#include "io/reader.hpp"

#include "io/read_error.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

namespace sluice::io {
namespace {

constexpr std::uint64_t align_mask = dma_buffer::alignment - 1;
/// Largest single kernel read; longer requests continue like short reads (read(2) caps near 2 GiB).
constexpr std::size_t max_attempt_bytes = std::size_t{1} << 30;
/// EINTR/EAGAIN resubmissions before the error is reported.
constexpr unsigned max_retries = 64;

bool is_aligned(const detail::read_op& op) {
    const auto address = reinterpret_cast<std::uintptr_t>(op.dest.data());
    return ((op.offset | op.dest.size() | address) & align_mask) == 0;
}

} // namespace

reader::~reader() = default;

reader_counters reader::counters() const noexcept {
    return {reads_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed),
            failures_.load(std::memory_order_relaxed)};
}

boost::asio::awaitable<result<void>> reader::read_at(const file& f, std::uint64_t offset, std::span<std::byte> dest) {
    co_return co_await async_read_at(f, offset, dest, boost::asio::use_awaitable);
}

boost::asio::awaitable<std::vector<result<void>>> reader::read_batch(std::span<const read_request> requests) {
    co_return co_await async_read_batch(requests, boost::asio::use_awaitable);
}

void reader::start(detail::read_op& op) {
    op.done = 0;
    op.retries = 0;
    if (op.dest.empty()) {
        finish(op, result<void>{});
        return;
    }
    if (op.f->direct() && !is_aligned(op)) {
        // O_DIRECT needs aligned offset, length and address: read an aligned superset and copy out at the end.
        const std::uint64_t begin = op.offset & ~align_mask;
        const std::uint64_t end = (op.offset + op.dest.size() + align_mask) & ~align_mask;
        op.bounce = dma_buffer(static_cast<std::size_t>(end - begin));
        op.target = op.bounce.data();
        op.target_offset = begin;
        op.target_len = static_cast<std::size_t>(end - begin);
        op.needed = static_cast<std::size_t>(op.offset - begin) + op.dest.size();
    } else {
        op.target = op.dest.data();
        op.target_offset = op.offset;
        op.target_len = op.dest.size();
        op.needed = op.dest.size();
    }
    issue_next(op);
}

void reader::start_batch(detail::batch_base& batch, std::span<const read_request> requests) {
    auto& items = batch.items();
    for (std::size_t i = 0; i < requests.size(); ++i) {
        items[i].f = requests[i].f;
        items[i].offset = requests[i].offset;
        items[i].dest = requests[i].dest;
    }
    for (auto& item : items) {
        start(item);
    }
    flush();
    batch.release_start_guard(); // may complete (and free) the batch when every item already ended
}

void reader::issue_next(detail::read_op& op) {
    // O_DIRECT continuations must start aligned; re-reading a few bytes already in the buffer is harmless.
    const std::size_t pos = op.f->direct() ? (op.done & ~static_cast<std::size_t>(align_mask)) : op.done;
    op.attempt_buf = op.target + pos;
    op.attempt_len = std::min(op.target_len - pos, max_attempt_bytes);
    op.attempt_offset = op.target_offset + pos;
    enqueue(op);
}

void reader::attempt_done(detail::read_op& op, long res) {
    const std::string& path = op.f->path();
    if ((res == -EINTR || res == -EAGAIN) && !op.cancel_requested && ++op.retries <= max_retries) {
        issue_next(op);
        return;
    }
    if (res < 0) {
        const bool cancelled = res == -ECANCELED && op.cancel_requested;
        finish(op, cancelled ? make_cancelled_error(path, op.offset, op.dest.size())
                             : make_read_errno_error(path, op.offset, op.dest.size(), static_cast<int>(-res)));
        return;
    }
    const std::size_t end = static_cast<std::size_t>(op.attempt_buf - op.target) + static_cast<std::size_t>(res);
    const bool progressed = end > op.done;
    op.done = std::max(op.done, end);
    if (op.done >= op.needed) {
        if (!op.bounce.empty()) {
            std::memcpy(op.dest.data(), op.bounce.data() + (op.offset - op.target_offset), op.dest.size());
        }
        finish(op, result<void>{});
    } else if (op.cancel_requested) {
        finish(op, make_cancelled_error(path, op.offset, op.dest.size()));
    } else if (!progressed) {
        finish(op, make_eof_error(path, op.offset, op.dest.size()));
    } else {
        issue_next(op); // short read: continue with the remainder
    }
}

void reader::finish(detail::read_op& op, result<void> outcome) {
    assert(!op.finished);
    op.finished = true;
    op.bounce = dma_buffer();
    if (outcome) {
        reads_.fetch_add(1, std::memory_order_relaxed);
        bytes_.fetch_add(op.dest.size(), std::memory_order_relaxed);
    } else {
        failures_.fetch_add(1, std::memory_order_relaxed);
    }
    op.on_complete(op, std::move(outcome)); // may free op
}

void reader::cancel_attempt(detail::read_op&) {}

void reader::request_cancel(detail::read_op& op) {
    if (op.finished || op.cancel_requested) {
        return;
    }
    op.cancel_requested = true;
    cancel_attempt(op);
    flush();
}

void reader::op_canceller::operator()(boost::asio::cancellation_type type) const {
    if (type != boost::asio::cancellation_type::none) {
        self->request_cancel(*op);
    }
}

void reader::batch_canceller::operator()(boost::asio::cancellation_type type) const {
    if (type == boost::asio::cancellation_type::none) {
        return;
    }
    // Cancelling never ends an item synchronously (backends post the outcome), so the batch stays alive here.
    for (auto& item : batch->items()) {
        self->request_cancel(item);
    }
}

void reader::post_attempt_done(detail::read_op& op, long res) {
    boost::asio::post(executor_, [this, &op, res] { attempt_done(op, res); });
}

} // namespace sluice::io
