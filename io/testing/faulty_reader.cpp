// Fault and delay injection for io::reader tests.
#include "io/testing/faulty_reader.hpp"

#include "io/read_error.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cerrno>

namespace sluice::io::testing {

/// Per-attempt state: the delay timer and the signal that cancels the forwarded read.
struct faulty_reader::attempt_state {
    explicit attempt_state(const boost::asio::any_io_executor& ex) : timer(ex) {}
    boost::asio::steady_timer timer;
    boost::asio::cancellation_signal forwarded;
};

namespace {

/// Turns the inner reader's outcome back into a kernel-style result for `attempt_done`.
long to_kernel_result(const result<void>& outcome, std::size_t len) {
    if (outcome) {
        return static_cast<long>(len);
    }
    const std::error_code& code = outcome.error().code;
    if (code == read_errc::unexpected_eof) {
        return 0;
    }
    if (code.category() == std::generic_category() || code.category() == std::system_category()) {
        return -static_cast<long>(code.value());
    }
    return -EIO;
}

} // namespace

faulty_reader::faulty_reader(std::unique_ptr<reader> inner)
    : reader(inner->get_executor()), inner_(std::move(inner)),
      name_("faulty(" + std::string(inner_->backend_name()) + ")") {}

faulty_reader::~faulty_reader() = default;

void faulty_reader::fail_nth_read(std::uint64_t n, int err) {
    fail_at_ = attempts_ + n;
    fail_at_err_ = err;
}

void faulty_reader::fail_range(std::uint64_t begin, std::uint64_t end, int err) {
    range_begin_ = begin;
    range_end_ = end;
    range_err_ = err;
}

void faulty_reader::shorten_nth_read(std::uint64_t n, std::size_t bytes) {
    shorten_at_ = attempts_ + n;
    shorten_bytes_ = bytes;
}

void faulty_reader::clear_faults() {
    fail_at_ = shorten_at_ = 0;
    range_begin_ = range_end_ = 0;
    delay_ = std::chrono::milliseconds(0);
}

void faulty_reader::enqueue(detail::read_op& op) {
    const std::uint64_t number = ++attempts_;
    int err = 0;
    if (number == fail_at_) {
        err = fail_at_err_;
    } else if (op.attempt_offset < range_end_ && op.attempt_offset + op.attempt_len > range_begin_) {
        err = range_err_;
    }
    std::size_t len = op.attempt_len;
    if (number == shorten_at_) {
        len = std::min(len, shorten_bytes_);
    }
    auto* state = new attempt_state(get_executor());
    op.backend_state = state;
    if (delay_.count() == 0) {
        perform(op, err, len);
        return;
    }
    state->timer.expires_after(delay_);
    state->timer.async_wait([this, &op, err, len](boost::system::error_code ec) {
        if (ec) {
            end_attempt(op, -ECANCELED);
        } else {
            perform(op, err, len);
        }
    });
}

void faulty_reader::perform(detail::read_op& op, int err, std::size_t len) {
    if (err != 0) {
        boost::asio::post(get_executor(), [this, &op, err] { end_attempt(op, -err); });
        return;
    }
    // Stop at the end of the file as the kernel would, so the inner reader reports a short read, not EOF.
    const std::uint64_t size = op.f->size();
    len = op.attempt_offset >= size ? 0
                                    : static_cast<std::size_t>(std::min<std::uint64_t>(len, size - op.attempt_offset));
    auto* state = static_cast<attempt_state*>(op.backend_state);
    inner_->async_read_at(
        *op.f, op.attempt_offset, std::span(op.attempt_buf, len),
        boost::asio::bind_cancellation_slot(state->forwarded.slot(), [this, &op, len](result<void> outcome) {
            end_attempt(op, to_kernel_result(outcome, len));
        }));
}

void faulty_reader::end_attempt(detail::read_op& op, long res) {
    delete static_cast<attempt_state*>(op.backend_state);
    op.backend_state = nullptr;
    attempt_done(op, res);
}

void faulty_reader::cancel_attempt(detail::read_op& op) {
    if (auto* state = static_cast<attempt_state*>(op.backend_state); state != nullptr) {
        state->timer.cancel();
        state->forwarded.emit(boost::asio::cancellation_type::all);
    }
}

} // namespace sluice::io::testing
