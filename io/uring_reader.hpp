// io::uring_reader: the io_uring backend; completions reach the io_context through a registered eventfd.
#pragma once

#include "io/detail/read_op.hpp"
#include "io/reader.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>

#include <liburing.h>

#include <memory>
#include <string_view>

namespace sluice::io {

/// Reads through one liburing ring of `queue_depth` entries. At most `queue_depth` reads are in the kernel;
/// the rest wait in a user-space FIFO and are submitted as completions free slots. The ring's eventfd is
/// watched by a posix::stream_descriptor only while reads are in flight; each wake-up reaps every CQE, resumes
/// the waiting operations and submits what they queued with one io_uring_submit.
class uring_reader final : public reader {
public:
    /// Sets up the ring and checks the kernel supports what we use (IORING_OP_READ, eventfd registration).
    /// Errors say what the kernel refused; make_reader logs them when it falls back to pread.
    static result<std::unique_ptr<uring_reader>> create(boost::asio::any_io_executor executor, unsigned queue_depth);

    ~uring_reader() override;

    [[nodiscard]] std::string_view backend_name() const noexcept override { return "io_uring"; }

private:
    uring_reader(boost::asio::any_io_executor executor, unsigned queue_depth);
    result<void> init();

    void enqueue(detail::read_op& op) override;
    void flush() override;
    void cancel_attempt(detail::read_op& op) override;

    void arm_wait();
    void on_wake();

    unsigned queue_depth_;
    io_uring ring_{};
    bool ring_ready_ = false;
    int event_fd_ = -1;
    boost::asio::posix::stream_descriptor event_watch_;
    detail::read_op_queue pending_;
    unsigned in_flight_ = 0; // SQEs prepared or in the kernel, not yet reaped
    bool waiting_ = false;
    bool submit_retry_posted_ = false;
};

} // namespace sluice::io
