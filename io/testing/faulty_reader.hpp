// io::testing::faulty_reader: a reader wrapper for tests that injects errors, short reads and delays.
#pragma once

#include "io/reader.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sluice::io::testing {

/// Wraps a reader and disturbs its kernel-level attempts on demand; everything else (alignment, retries,
/// short-read continuation, EOF, per-request results) runs through the same `reader` logic as production.
/// "Attempt" means one kernel read: a request can take several (after EINTR, a short read, ...).
/// Not thread-safe; configure it on the reader's executor or before starting reads.
class faulty_reader final : public reader {
public:
    explicit faulty_reader(std::unique_ptr<reader> inner);
    ~faulty_reader() override;

    /// "faulty(<inner backend>)".
    [[nodiscard]] std::string_view backend_name() const noexcept override { return name_; }

    /// The `n`-th attempt from now (1-based) ends with errno `err` without reaching the inner reader.
    void fail_nth_read(std::uint64_t n, int err);
    /// Every attempt overlapping file bytes [begin, end) ends with errno `err`.
    void fail_range(std::uint64_t begin, std::uint64_t end, int err);
    /// The `n`-th attempt from now (1-based) delivers at most `bytes` bytes, like a short read.
    void shorten_nth_read(std::uint64_t n, std::size_t bytes);
    /// Every attempt first waits `delay` on a timer (cancellable).
    void delay_reads(std::chrono::milliseconds delay) { delay_ = delay; }
    /// Removes every fault and delay.
    void clear_faults();

    /// Attempts seen so far.
    [[nodiscard]] std::uint64_t attempts() const noexcept { return attempts_; }
    /// The wrapped reader.
    [[nodiscard]] reader& inner() noexcept { return *inner_; }

private:
    struct attempt_state;

    void enqueue(detail::read_op& op) override;
    void flush() override {}
    void cancel_attempt(detail::read_op& op) override;

    void perform(detail::read_op& op, int err, std::size_t len);
    void end_attempt(detail::read_op& op, long res);

    std::unique_ptr<reader> inner_;
    std::string name_;
    std::uint64_t attempts_ = 0;
    std::uint64_t fail_at_ = 0; // attempt number, 0 = none
    int fail_at_err_ = 0;
    std::uint64_t range_begin_ = 0;
    std::uint64_t range_end_ = 0; // empty range = none
    int range_err_ = 0;
    std::uint64_t shorten_at_ = 0;
    std::size_t shorten_bytes_ = 0;
    std::chrono::milliseconds delay_{0};
};

} // namespace sluice::io::testing
