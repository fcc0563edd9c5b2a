// Slab reads: queued under a short lock, submitted on the executor in one io_uring submission, counted when they
// end; the reader is made when a pass attaches and dropped once nothing is attached, queued or in flight.
#include "runtime/experts/read_scheduler.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace sluice::experts {

read_scheduler::read_scheduler(io::reader_options options, completion on_done)
    : options_(options), on_done_(std::move(on_done)) {}

read_scheduler::~read_scheduler() {
    // Reads still with the kernel end later on the executor: their handlers see this and only let go of the
    // reader and the destination memory, the last of them destroying the reader.
    alive_->store(false);
}

void read_scheduler::attach(const boost::asio::any_io_executor& executor) {
    ++attached_;
    {
        std::lock_guard lock(mu_);
        executor_ = executor;
    }
    if (!reader_) {
        auto reader = io::make_reader(executor, options_);
        if (reader) {
            reader_ = std::shared_ptr<io::reader>(std::move(*reader));
            reader_error_.reset();
        } else {
            reader_error_ = reader.error().with_context("expert cache");
        }
    }
    submit_queued(); // reads asked for while no pass was attached
}

void read_scheduler::detach() noexcept {
    if (attached_ > 0) {
        --attached_;
    }
    drop_idle_reader();
}

void read_scheduler::enqueue(std::span<const slab_read> reads) {
    if (reads.empty()) {
        return;
    }
    boost::asio::any_io_executor ex;
    {
        std::lock_guard lock(mu_);
        queue_.insert(queue_.end(), reads.begin(), reads.end());
        if (submit_posted_ || !executor_) {
            return; // a submission is on its way, or the next attach submits
        }
        submit_posted_ = true;
        ex = executor_;
    }
    // Waking the executor's thread costs the compute threads a core for a moment: one post per batch of reads.
    boost::asio::post(ex, [this, alive = alive_] {
        if (alive->load()) {
            submit_queued();
        }
    });
}

void read_scheduler::submit_queued() {
    std::vector<slab_read> reads;
    {
        std::lock_guard lock(mu_);
        submit_posted_ = false;
        if (!reader_ && !reader_error_) {
            return; // no pass attached: the next attach submits them
        }
        reads.swap(queue_);
        if (reads.empty()) {
            return;
        }
        if (in_flight_ == 0) {
            busy_since_ = std::chrono::steady_clock::now();
        }
        in_flight_ += static_cast<std::uint32_t>(reads.size());
    }
    const auto started = std::chrono::steady_clock::now();
    if (!reader_) {
        for (const auto& r : reads) {
            finished(r, started, *reader_error_);
        }
        return;
    }
    // One read per slab (splitting a slab into pieces read in parallel was measured: no lower latency, the
    // device's ~2 ms per request does not depend on its size here).
    reader_->hold_submissions();
    for (const auto& r : reads) {
        reader_->async_read_at(*r.file, r.offset, r.dest,
                               [this, r, started, alive = alive_, reader = reader_, memory = memory_](result<void> res) {
                                   if (alive->load()) {
                                       finished(r, started, res);
                                   }
                               });
    }
    reader_->release_submissions();
}

void read_scheduler::finished(const slab_read& read, std::chrono::steady_clock::time_point started,
                              const result<void>& r) {
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mu_);
        const double latency = std::chrono::duration<double>(now - started).count();
        stats_.latency_sum_s += latency;
        const auto us = static_cast<std::uint64_t>(latency * 1e6);
        const auto& bounds = read_stats::latency_bounds_us;
        const auto bucket =
            static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), us) - bounds.begin());
        ++stats_.latency_buckets[bucket];
        if (--in_flight_ == 0) {
            stats_.busy_s += std::chrono::duration<double>(now - busy_since_).count();
        }
        if (r) {
            ++stats_.reads;
            stats_.bytes_read += read.dest.size();
        } else {
            ++stats_.read_failures;
        }
    }
    on_done_(read.tag, read.part, r);
    if (attached_ == 0 && idle()) {
        // The reader may be the one completing this read: let its completion return before it goes.
        boost::asio::post(executor_, [this, alive = alive_] {
            if (alive->load()) {
                drop_idle_reader();
            }
        });
    }
}

bool read_scheduler::idle() const noexcept {
    std::lock_guard lock(mu_);
    return attached_ == 0 && in_flight_ == 0 && queue_.empty() && !submit_posted_;
}

void read_scheduler::drop_idle_reader() noexcept {
    if (reader_ && idle()) {
        reader_.reset();
    }
}

read_stats read_scheduler::stats() const {
    std::lock_guard lock(mu_);
    auto s = stats_;
    if (in_flight_ > 0) {
        s.busy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
    }
    return s;
}

} // namespace sluice::experts
