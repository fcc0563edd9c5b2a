// The pread thread-pool backend of io::reader.
#include "io/pread_reader.hpp"

#include <boost/asio/post.hpp>

#include <cassert>
#include <cerrno>
#include <unistd.h>

namespace sluice::io {

pread_reader::pread_reader(boost::asio::any_io_executor executor, std::size_t threads)
    : reader(std::move(executor)), pool_(threads) {}

pread_reader::~pread_reader() {
    assert(in_flight_.load() == 0 && "pread_reader destroyed with reads in flight");
    pool_.join();
}

void pread_reader::enqueue(detail::read_op& op) {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(pool_, [this, &op] {
        // On a worker thread: only the attempt fields are read here; the op is otherwise left alone.
        const ssize_t n = ::pread(op.f->fd(), op.attempt_buf, op.attempt_len, static_cast<off_t>(op.attempt_offset));
        const long res = n < 0 ? -static_cast<long>(errno) : static_cast<long>(n);
        boost::asio::post(get_executor(), [this, &op, res] {
            in_flight_.fetch_sub(1, std::memory_order_relaxed);
            attempt_done(op, res);
        });
    });
}

void pread_reader::cancel_attempt(detail::read_op&) {
    // A pread already queued in the pool cannot be pulled back; attempt_done sees cancel_requested when it ends.
}

} // namespace sluice::io
