// io::pread_reader: the fallback backend; a small thread pool runs pread(2) and posts results back.
#pragma once

#include "io/reader.hpp"

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstddef>
#include <string_view>

namespace sluice::io {

/// Reads with pread(2) on `threads` worker threads; each outcome is posted back to the reader's executor, so
/// the io_context thread never blocks. Used when io_uring is unavailable or forced off.
class pread_reader final : public reader {
public:
    pread_reader(boost::asio::any_io_executor executor, std::size_t threads);
    ~pread_reader() override;

    [[nodiscard]] std::string_view backend_name() const noexcept override { return "pread"; }

private:
    void enqueue(detail::read_op& op) override;
    void flush() override {}
    void cancel_attempt(detail::read_op& op) override;

    boost::asio::thread_pool pool_;
    std::atomic<unsigned> in_flight_{0};
};

} // namespace sluice::io
