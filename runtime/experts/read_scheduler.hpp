// The expert cache's reads: slab reads queued from any thread and submitted together on the executor of the
// attached forward passes through an io::reader (io_uring where available), which exists only while a pass is
// attached or reads are in flight; completions come back on that executor. It counts reads, bytes, failures,
// latency and busy time. It knows nothing of slots' meaning: a read is (tag, file range, destination).
#pragma once

#include "io/reader.hpp"
#include "sluice/error.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace sluice::experts {

/// One slab to read: `dest` gets the file's bytes at `offset` (both 4 KiB-aligned; the range may run past the
/// end of the file, which then fails the read). `tag` and `part` come back with its completion.
struct slab_read {
    std::int32_t tag = 0;
    std::uint32_t part = 0;
    const io::file* file = nullptr;
    std::uint64_t offset = 0;
    std::span<std::byte> dest;
};

/// Read counters (monotonic).
struct read_stats {
    /// Upper bounds of the read-latency histogram buckets, in microseconds (the last bucket is unbounded).
    static constexpr std::array<std::uint32_t, 11> latency_bounds_us{100,   250,   500,    1000,   2500,  5000,
                                                                     10000, 25000, 50000, 100000, 250000};
    std::uint64_t reads = 0;         ///< reads completed
    std::uint64_t read_failures = 0; ///< reads that failed
    std::uint64_t bytes_read = 0;    ///< bytes those reads delivered
    std::array<std::uint64_t, latency_bounds_us.size() + 1> latency_buckets{}; ///< non-cumulative counts
    double latency_sum_s = 0;        ///< sum of read latencies
    double busy_s = 0;               ///< time with at least one read in flight
};

/// Queues and submits slab reads. `enqueue` and `stats` are thread-safe; attach, detach and the completion
/// callback run on the one executor the forward passes share (a single-threaded io_context).
class read_scheduler {
public:
    /// Called on the executor for every finished read: its tag and part, and its result.
    using completion = std::function<void(std::int32_t tag, std::uint32_t part, const result<void>& r)>;

    read_scheduler(io::reader_options options, completion on_done);
    ~read_scheduler();
    read_scheduler(const read_scheduler&) = delete;
    read_scheduler& operator=(const read_scheduler&) = delete;

    /// A forward pass starts on `executor`: make a reader there if none is alive, then submit what is queued.
    void attach(const boost::asio::any_io_executor& executor);
    /// That pass ended; the reader goes once nothing is attached, queued or in flight (at once when nothing is).
    void detach() noexcept;
    /// Queues reads; they are submitted on the executor as one batch (at once when a pass is attached, else
    /// at the next attach). Thread-safe.
    void enqueue(std::span<const slab_read> reads);
    /// A snapshot of the counters (busy time includes the read in progress). Thread-safe.
    [[nodiscard]] read_stats stats() const;
    /// Memory the reads land in, kept alive until the last read the kernel holds has ended, even when this
    /// scheduler (and the cache owning that memory) is destroyed first.
    void keep_alive(std::shared_ptr<const void> memory) { memory_ = std::move(memory); }

private:
    void submit_queued();
    void finished(const slab_read& read, std::chrono::steady_clock::time_point started, const result<void>& r);
    [[nodiscard]] bool idle() const noexcept;
    void drop_idle_reader() noexcept;

    io::reader_options options_;
    completion on_done_;

    mutable std::mutex mu_;
    std::vector<slab_read> queue_;
    bool submit_posted_ = false; ///< a submit_queued is posted and has not run yet
    read_stats stats_;
    std::uint32_t in_flight_ = 0;
    std::chrono::steady_clock::time_point busy_since_;
    boost::asio::any_io_executor executor_;

    // Executor side.
    /// Exists while a pass is attached or reads are in flight. Each read's handler holds it too, so a
    /// scheduler destroyed with reads in flight leaves the reader to finish them (its reads hold the
    /// executor's work, so destroying it then would leave an io_context with work that never ends).
    std::shared_ptr<io::reader> reader_;
    std::shared_ptr<const void> memory_; ///< see keep_alive
    /// False once the scheduler is destroyed: handlers still to run do nothing but release what they hold.
    std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
    std::uint32_t attached_ = 0;
    std::optional<error> reader_error_; ///< the reader could not be made: every read fails with this
};

} // namespace sluice::experts
