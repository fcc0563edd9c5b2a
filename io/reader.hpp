// io::reader: asynchronous positional reads (io_uring or a pread pool) that complete in an asio io_context.
#pragma once

#include "io/detail/handler_ops.hpp"
#include "io/detail/read_op.hpp"
#include "io/file.hpp"
#include "sluice/error.hpp"
#include "sluice/io_options.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sluice::io {

/// One read of a batch: `dest.size()` bytes of `*f` from `offset`.
struct read_request {
    const file* f;
    std::uint64_t offset;
    std::span<std::byte> dest;
};

/// Running totals since the reader was made.
struct reader_counters {
    std::uint64_t reads = 0;    ///< requests that succeeded
    std::uint64_t bytes = 0;    ///< bytes they delivered
    std::uint64_t failures = 0; ///< requests that ended with an error
};

/// Reads byte ranges of files without blocking any io_context thread.
///
/// Every read delivers exactly `dest.size()` bytes or an error naming the file path and offset: EINTR/EAGAIN are
/// resubmitted, short reads continue with the remainder, reading past the end of the file is
/// "PATH: unexpected end of file at offset N (wanted M bytes)". Any offset, size and buffer address may be
/// used; on an O_DIRECT file an unaligned request goes through an aligned bounce buffer.
///
/// Thread-safety: a reader, and the operations started on it, belong to its executor, which must run on one
/// thread at a time (a single-threaded io_context or a strand). Files and buffers must outlive their reads.
/// Destroying a reader with reads still running is a programming error.
class reader {
public:
    using executor_type = boost::asio::any_io_executor;

    virtual ~reader();
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;

    /// The executor on which completions are delivered.
    [[nodiscard]] executor_type get_executor() const noexcept { return executor_; }
    /// "io_uring" or "pread" (wrappers name what they wrap).
    [[nodiscard]] virtual std::string_view backend_name() const noexcept = 0;
    /// Totals so far; safe to call from any thread.
    [[nodiscard]] reader_counters counters() const noexcept;

    /// Reads exactly `dest.size()` bytes of `f` starting at `offset`.
    boost::asio::awaitable<result<void>> read_at(const file& f, std::uint64_t offset, std::span<std::byte> dest);

    /// Starts all `requests` at once (one submission, as far as the queue depth allows; the rest are submitted
    /// as slots free) and completes when all have ended, with one result per request, in order.
    boost::asio::awaitable<std::vector<result<void>>> read_batch(std::span<const read_request> requests);

    /// Completion-token form of `read_at`; signature void(result<void>). A cancellation slot bound to the token
    /// is honoured: a read not yet handed to the kernel ends at once, one in flight is asked to stop, and the
    /// handler always runs after the kernel has let go of `dest` (with a cancelled error unless it finished).
    template <boost::asio::completion_token_for<void(result<void>)> Token>
    auto async_read_at(const file& f, std::uint64_t offset, std::span<std::byte> dest, Token&& token) {
        return boost::asio::async_initiate<Token, void(result<void>)>(
            [this, &f, offset, dest](auto handler) {
                using op_type = detail::handler_read_op<std::decay_t<decltype(handler)>>;
                auto* op = new op_type(std::move(handler), executor_);
                op->f = &f;
                op->offset = offset;
                op->dest = dest;
                if (auto slot = op->cancellation_slot(); slot.is_connected()) {
                    slot.template emplace<op_canceller>(this, op);
                }
                start(*op);
                if (held_ == 0) {
                    flush();
                }
            },
            token);
    }

    /// Holds back the kernel submission of reads started with `async_read_at` until the matching
    /// `release_submissions` (calls nest), so reads started one by one reach the kernel in one submission.
    void hold_submissions() noexcept { ++held_; }
    /// Ends a `hold_submissions`; the outermost one submits everything started meanwhile.
    void release_submissions() {
        if (held_ > 0 && --held_ == 0) {
            flush();
        }
    }

    /// Completion-token form of `read_batch`; signature void(std::vector<result<void>>). `requests` is copied
    /// when the operation starts. Cancellation applies to every request of the batch.
    template <boost::asio::completion_token_for<void(std::vector<result<void>>)> Token>
    auto async_read_batch(std::span<const read_request> requests, Token&& token) {
        return boost::asio::async_initiate<Token, void(std::vector<result<void>>)>(
            [this, requests](auto handler) {
                using op_type = detail::handler_batch_op<std::decay_t<decltype(handler)>>;
                auto* batch = new op_type(std::move(handler), executor_, requests.size());
                if (auto slot = batch->cancellation_slot(); slot.is_connected()) {
                    slot.template emplace<batch_canceller>(this, batch);
                }
                start_batch(*batch, requests);
            },
            token);
    }

protected:
    explicit reader(executor_type executor) : executor_(std::move(executor)) {}

    /// Backend hook: perform `op.attempt_len` bytes at `op.attempt_offset` of `op.f` into `op.attempt_buf`, then
    /// call `attempt_done` on the executor. May hold the op until `flush`; a backend that holds ops must flush
    /// again after delivering completions.
    virtual void enqueue(detail::read_op& op) = 0;
    /// Backend hook: hand everything enqueued to the kernel (one submission).
    virtual void flush() = 0;
    /// Backend hook: `op` was cancelled (`op.cancel_requested` is already set). A backend should end an op it
    /// still holds with `post_attempt_done(op, -ECANCELED)` (never synchronously) and may ask the kernel to
    /// stop one in flight. The default does nothing: the op ends when its attempt does.
    virtual void cancel_attempt(detail::read_op& op);

    /// Reports the end of an attempt: `res` is the byte count or -errno. Call on the executor.
    void attempt_done(detail::read_op& op, long res);
    /// Posts `attempt_done(op, res)` to the executor (for outcomes known before the kernel saw the op).
    void post_attempt_done(detail::read_op& op, long res);

private:
    struct op_canceller {
        reader* self;
        detail::read_op* op;
        void operator()(boost::asio::cancellation_type type) const;
    };
    struct batch_canceller {
        reader* self;
        detail::batch_base* batch;
        void operator()(boost::asio::cancellation_type type) const;
    };

    void start(detail::read_op& op);
    void start_batch(detail::batch_base& batch, std::span<const read_request> requests);
    void request_cancel(detail::read_op& op);
    void issue_next(detail::read_op& op);
    void finish(detail::read_op& op, result<void> outcome);

    executor_type executor_;
    unsigned held_ = 0; ///< nested hold_submissions calls
    std::atomic<std::uint64_t> reads_{0};
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::uint64_t> failures_{0};
};

/// Makes the reader for `executor`. With `backend::auto_select` it checks io_uring at start-up (the ring can be
/// set up, IORING_OP_READ is supported, an eventfd can be registered) and otherwise falls back to pread, logging
/// why. The environment variable SLUICE_IO_BACKEND=io_uring|pread overrides `options.force`. Errors: a forced
/// io_uring that the kernel refuses, an unknown SLUICE_IO_BACKEND value, or a zero queue depth / thread count.
result<std::unique_ptr<reader>> make_reader(boost::asio::any_io_executor executor, reader_options options = {});

} // namespace sluice::io
