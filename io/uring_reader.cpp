// The io_uring backend of io::reader: a liburing ring fed in batches and reaped on eventfd wake-ups.
#include "io/uring_reader.hpp"

#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <cassert>
#include <cerrno>
#include <cstdint>
#include <string>
#include <sys/eventfd.h>
#include <unistd.h>

namespace sluice::io {
namespace {

/// user_data of cancel requests; their CQEs carry no read.
void* const cancel_tag = reinterpret_cast<void*>(std::uintptr_t{1});

result<void> probe_read_opcode(io_uring& ring) {
    io_uring_probe* probe = io_uring_get_probe_ring(&ring);
    if (probe == nullptr) {
        return make_error(std::errc::function_not_supported, "io_uring: the kernel cannot be probed (older than 5.6)");
    }
    const bool has_read = io_uring_opcode_supported(probe, IORING_OP_READ) != 0;
    io_uring_free_probe(probe);
    if (!has_read) {
        return make_error(std::errc::function_not_supported, "io_uring: IORING_OP_READ is not supported");
    }
    return {};
}

} // namespace

uring_reader::uring_reader(boost::asio::any_io_executor executor, unsigned queue_depth)
    : reader(executor), queue_depth_(queue_depth), event_watch_(executor) {}

result<std::unique_ptr<uring_reader>> uring_reader::create(boost::asio::any_io_executor executor,
                                                           unsigned queue_depth) {
    std::unique_ptr<uring_reader> r(new uring_reader(std::move(executor), queue_depth));
    if (auto ok = r->init(); !ok) {
        return ok.error();
    }
    return r;
}

result<void> uring_reader::init() {
    if (const int rc = io_uring_queue_init(queue_depth_, &ring_, 0); rc < 0) {
        return make_errno_error(-rc, "io_uring: queue_init with " + std::to_string(queue_depth_) + " entries failed");
    }
    ring_ready_ = true;
    if (auto ok = probe_read_opcode(ring_); !ok) {
        return ok.error();
    }
    event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (event_fd_ < 0) {
        return make_errno_error(errno, "io_uring: eventfd failed");
    }
    if (const int rc = io_uring_register_eventfd(&ring_, event_fd_); rc < 0) {
        ::close(event_fd_);
        event_fd_ = -1;
        return make_errno_error(-rc, "io_uring: registering the eventfd failed");
    }
    boost::system::error_code ec;
    event_watch_.assign(event_fd_, ec); // the descriptor now owns and closes the eventfd
    if (ec) {
        ::close(event_fd_);
        event_fd_ = -1;
        return make_error(std::errc::io_error, "io_uring: watching the eventfd failed: " + ec.message());
    }
    return {};
}

uring_reader::~uring_reader() {
    assert(in_flight_ == 0 && pending_.empty() && "uring_reader destroyed with reads in flight");
    boost::system::error_code ec;
    event_watch_.close(ec);
    if (ring_ready_) {
        io_uring_queue_exit(&ring_);
    }
}

void uring_reader::enqueue(detail::read_op& op) {
    pending_.push(op);
}

void uring_reader::flush() {
    // Step 1: move queued reads into free ring slots.
    while (!pending_.empty() && in_flight_ < queue_depth_) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) {
            break;
        }
        detail::read_op& op = pending_.pop();
        io_uring_prep_read(sqe, op.f->fd(), op.attempt_buf, static_cast<unsigned>(op.attempt_len), op.attempt_offset);
        io_uring_sqe_set_data(sqe, &op);
        ++in_flight_;
    }
    // Step 2: one submission for all of them.
    if (io_uring_sq_ready(&ring_) > 0) {
        const int rc = io_uring_submit(&ring_);
        if (rc < 0 && !submit_retry_posted_) {
            // EAGAIN/EBUSY (kernel short of resources or CQ full): the SQEs stay queued; try again shortly.
            spdlog::debug("io_uring: submit failed ({}), retrying", -rc);
            submit_retry_posted_ = true;
            boost::asio::post(get_executor(), [this] {
                submit_retry_posted_ = false;
                flush();
            });
        }
    }
    arm_wait();
}

void uring_reader::cancel_attempt(detail::read_op& op) {
    if (op.queued) {
        pending_.remove(op);
        post_attempt_done(op, -ECANCELED);
        return;
    }
    // In the kernel: ask it to stop. Regular-file reads often cannot be interrupted; the read's own CQE ends
    // the op either way, so the buffer is never released while the kernel still writes to it.
    if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_); sqe != nullptr) {
        io_uring_prep_cancel(sqe, &op, 0);
        io_uring_sqe_set_data(sqe, cancel_tag);
    }
}

void uring_reader::arm_wait() {
    if (waiting_ || in_flight_ == 0) {
        return; // no pending wait while idle, so an io_context with nothing else to do can return from run()
    }
    waiting_ = true;
    event_watch_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
        waiting_ = false;
        if (ec) {
            spdlog::error("io_uring: waiting on the eventfd failed: {}", ec.message());
            return;
        }
        on_wake();
    });
}

void uring_reader::on_wake() {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(event_fd_, &count, sizeof count); // reset before reaping
    io_uring_cqe* cqe = nullptr;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
        void* data = io_uring_cqe_get_data(cqe);
        const long res = cqe->res;
        io_uring_cqe_seen(&ring_, cqe);
        if (data == cancel_tag) {
            continue;
        }
        --in_flight_;
        attempt_done(*static_cast<detail::read_op*>(data), res); // may enqueue a continuation
    }
    flush();
}

} // namespace sluice::io
