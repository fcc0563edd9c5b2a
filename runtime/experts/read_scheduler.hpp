// The expert cache's reads: slab reads queued from any thread and submitted together on the executor of the
// attached forward passes through an io::reader (io_uring where available), which exists only while a pass is
// attached or reads are in flight; completions come back on that executor. It counts reads, bytes, failures,
// latency and busy time. It knows nothing of slots' meaning: a read is (tag, file range, destination, priority).
// In FIFO order every queued read goes to the kernel at the next submission; in priority order demand reads do,
// and predictions wait in the queue (nearest layer first) until fewer than a window of reads is in flight.
#pragma once

#include "io/reader.hpp"
#include "sluice/error.hpp"
#include "sluice/model_options.hpp"

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
#include <string_view>
#include <vector>

namespace sluice::experts {

/// The order reads reach the disk (public: sluice::expert_read_order).
using read_order = sluice::expert_read_order;

/// Reads in flight below which priority order submits predictions. On the 2-vCPU VM's disk windows of 2, 4, 8 and
/// 16 868 KiB reads all gained 1.1-1.2x over FIFO on learned routing (docs/PERFORMANCE.md, "Read scheduling"); 8
/// keeps the disk's queue full (fio: latency grows with depth from 1-2 reads on) while leaving few predictions
/// ahead of a demand read.
inline constexpr std::uint32_t default_read_window = 8;

/// How a read scheduler orders its reads.
struct read_scheduler_options {
    read_order order = read_order::fifo;
    std::uint32_t window = default_read_window; ///< priority order: see default_read_window (at least 1)
};

/// "fifo" or "priority"; anything else is an error naming the value.
result<read_order> parse_read_order(std::string_view name);
/// The name parse_read_order reads.
[[nodiscard]] std::string_view to_string(read_order order) noexcept;

/// One slab to read: `dest` gets the file's bytes at `offset` (both 4 KiB-aligned; the range may run past the
/// end of the file, which then fails the read). `tag` and `part` come back with its completion.
struct slab_read {
    std::int32_t tag = 0;
    std::uint32_t part = 0;
    const io::file* file = nullptr;
    std::uint64_t offset = 0;
    std::span<std::byte> dest;
    /// 0: a demand read (a layer being computed waits for it); 1, 2: a prediction that many layers ahead.
    std::uint8_t priority = 0;
};

/// Read counters (monotonic).
struct read_stats {
    /// Upper bounds of the read-latency histogram buckets, in microseconds (the last bucket is unbounded).
    static constexpr std::array<std::uint32_t, 11> latency_bounds_us{100,   250,   500,   1000,   2500,  5000,
                                                                     10000, 25000, 50000, 100000, 250000};
    std::uint64_t reads = 0;                                                   ///< reads completed
    std::uint64_t read_failures = 0;                                           ///< reads that failed
    std::uint64_t bytes_read = 0;                                              ///< bytes those reads delivered
    std::array<std::uint64_t, latency_bounds_us.size() + 1> latency_buckets{}; ///< non-cumulative counts
    double latency_sum_s = 0;                                                  ///< sum of read latencies
    double busy_s = 0;              ///< time with at least one read in flight
    std::uint64_t demand_reads = 0; ///< completed reads that were demand reads when submitted (priority 0)
    /// Sum over demand reads of the reads already in flight when each was submitted (what it queued behind).
    std::uint64_t demand_queued_behind = 0;
    double demand_latency_s = 0;      ///< sum over demand reads of enqueue to completion
    std::uint64_t reads_deferred = 0; ///< priority order: predictions held in the queue by the window (once each)
    std::uint64_t reads_dropped = 0;  ///< reads taken out of the queue unsubmitted (cancel)
    std::uint64_t reads_promoted = 0; ///< queued reads given a nearer priority (raise)
};

/// Queues and submits slab reads. `enqueue` and `stats` are thread-safe; attach, detach and the completion
/// callback run on the one executor the forward passes share (a single-threaded io_context).
class read_scheduler {
public:
    /// Called on the executor for every finished read: its tag and part, and its result.
    using completion = std::function<void(std::int32_t tag, std::uint32_t part, const result<void>& r)>;

    read_scheduler(io::reader_options options, read_scheduler_options order, completion on_done);
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
    /// Gives the queued, unsubmitted reads of `tag` priority `priority` when that is nearer (lower) than theirs,
    /// and submits them at once if that makes them demand reads: whether any was. Thread-safe; FIFO order
    /// ignores it (false).
    bool raise(std::int32_t tag, std::uint8_t priority);
    /// Takes the reads of `tag` out of the queue when all `parts` of them are still there (none submitted):
    /// true, and no completion will come for them. False (and nothing changes) otherwise. Thread-safe.
    bool cancel(std::int32_t tag, std::uint32_t parts);
    [[nodiscard]] read_order order() const noexcept { return order_.order; }
    /// A snapshot of the counters (busy time includes the read in progress). Thread-safe.
    [[nodiscard]] read_stats stats() const;
    /// Memory the reads land in, kept alive until the last read the kernel holds has ended, even when this
    /// scheduler (and the cache owning that memory) is destroyed first.
    void keep_alive(std::shared_ptr<const void> memory) { memory_ = std::move(memory); }

private:
    using clock = std::chrono::steady_clock;
    /// A read waiting for submission.
    struct queued_read {
        slab_read read;
        clock::time_point enqueued;
        bool deferred = false; ///< already counted in reads_deferred
    };
    /// A submitted read, as its completion needs it.
    struct submitted_read {
        slab_read read;
        clock::time_point enqueued, started;
    };

    void submit_queued();
    /// Under mu_: the reads to submit now, taken out of the queue (all in FIFO order; demand reads and
    /// predictions up to the window in priority order).
    std::vector<submitted_read> take_submittable(clock::time_point now);
    /// Under mu_: posts a submit_queued unless one is posted or no pass is attached; the executor to post to.
    boost::asio::any_io_executor want_submit();
    void post_submit(const boost::asio::any_io_executor& ex);
    void finished(const submitted_read& read, const result<void>& r);
    [[nodiscard]] bool idle() const noexcept;
    void drop_idle_reader() noexcept;

    io::reader_options options_;
    read_scheduler_options order_;
    completion on_done_;

    mutable std::mutex mu_;
    std::vector<queued_read> queue_;
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
    std::uint32_t attached_ = 0; ///< passes attached (changed on the executor under mu_; enqueue reads it)
    std::optional<error> reader_error_; ///< the reader could not be made: every read fails with this
};

} // namespace sluice::experts
