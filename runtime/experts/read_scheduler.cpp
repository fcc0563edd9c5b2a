// Slab reads: queued under a short lock, submitted on the executor in one io_uring submission (FIFO: all of them;
// priority: demand reads and predictions up to the window), counted when they end; the reader is made when a pass
// attaches and dropped once nothing is attached, queued or in flight.
#include "runtime/experts/read_scheduler.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <string>

namespace sluice::experts {

result<read_order> parse_read_order(std::string_view name) {
    if (name == "fifo") {
        return read_order::fifo;
    }
    if (name == "priority") {
        return read_order::priority;
    }
    return make_error(std::errc::invalid_argument,
                      "unknown read order \"" + std::string(name) + "\" (expected fifo or priority)");
}

std::string_view to_string(read_order order) noexcept {
    return order == read_order::priority ? "priority" : "fifo";
}

read_scheduler::read_scheduler(io::reader_options options, read_scheduler_options order, completion on_done)
    : options_(options), order_(order), on_done_(std::move(on_done)) {
    order_.window = std::max<std::uint32_t>(order_.window, 1);
}

read_scheduler::~read_scheduler() {
    // Reads still with the kernel end later on the executor: their handlers see this and only let go of the
    // reader and the destination memory, the last of them destroying the reader.
    alive_->store(false);
}

void read_scheduler::attach(const boost::asio::any_io_executor& executor) {
    {
        std::lock_guard lock(mu_);
        ++attached_;
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
    {
        std::lock_guard lock(mu_);
        attached_ -= attached_ > 0 ? 1 : 0;
    }
    drop_idle_reader();
}

boost::asio::any_io_executor read_scheduler::want_submit() {
    // With no pass attached and no read in flight, the executor's io_context may be gone: the next attach submits.
    if (submit_posted_ || !executor_ || (attached_ == 0 && in_flight_ == 0)) {
        return {}; // a submission is on its way, or the next attach submits
    }
    submit_posted_ = true;
    return executor_;
}

void read_scheduler::post_submit(const boost::asio::any_io_executor& ex) {
    if (!ex) {
        return;
    }
    // Waking the executor's thread costs the compute threads a core for a moment: one post per batch of reads.
    boost::asio::post(ex, [this, alive = alive_] {
        if (alive->load()) {
            submit_queued();
        }
    });
}

void read_scheduler::enqueue(std::span<const slab_read> reads) {
    if (reads.empty()) {
        return;
    }
    const auto now = clock::now();
    boost::asio::any_io_executor ex;
    {
        std::lock_guard lock(mu_);
        for (const auto& r : reads) {
            queue_.push_back({r, now});
        }
        ex = want_submit();
    }
    post_submit(ex);
}

bool read_scheduler::raise(std::int32_t tag, std::uint8_t priority) {
    if (order_.order != read_order::priority) {
        return false;
    }
    boost::asio::any_io_executor ex;
    bool raised = false;
    {
        std::lock_guard lock(mu_);
        bool demand = false;
        for (auto& q : queue_) {
            if (q.read.tag == tag && q.read.priority > priority) {
                q.read.priority = priority;
                ++stats_.reads_promoted;
                raised = true;
                demand = demand || priority == 0;
            }
        }
        if (demand) {
            ex = want_submit();
        }
    }
    post_submit(ex);
    return raised;
}

bool read_scheduler::cancel(std::int32_t tag, std::uint32_t parts) {
    std::lock_guard lock(mu_);
    const auto queued = static_cast<std::uint32_t>(
        std::count_if(queue_.begin(), queue_.end(), [&](const queued_read& q) { return q.read.tag == tag; }));
    if (queued == 0 || queued != parts) {
        return false; // some are with the kernel (or were never queued): their completions will come
    }
    std::erase_if(queue_, [&](const queued_read& q) { return q.read.tag == tag; });
    stats_.reads_dropped += parts;
    return true;
}

std::vector<read_scheduler::submitted_read> read_scheduler::take_submittable(clock::time_point now) {
    std::vector<submitted_read> out;
    if (order_.order == read_order::fifo || !reader_) {
        out.reserve(queue_.size());
        for (const auto& q : queue_) {
            out.push_back({q.read, q.enqueued, now});
        }
        queue_.clear();
        return out;
    }
    // Demand reads first and all of them; then the nearest predictions, oldest first, while the window has room.
    std::stable_sort(queue_.begin(), queue_.end(),
                     [](const queued_read& a, const queued_read& b) { return a.read.priority < b.read.priority; });
    std::size_t taken = 0;
    auto in_flight = in_flight_;
    for (; taken < queue_.size(); ++taken) {
        const auto& q = queue_[taken];
        if (q.read.priority != 0 && in_flight >= order_.window) {
            break;
        }
        out.push_back({q.read, q.enqueued, now});
        ++in_flight;
    }
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
    for (auto& q : queue_) {
        if (!q.deferred) {
            q.deferred = true;
            ++stats_.reads_deferred;
        }
    }
    return out;
}

void read_scheduler::submit_queued() {
    std::vector<submitted_read> reads;
    const auto now = clock::now();
    {
        std::lock_guard lock(mu_);
        submit_posted_ = false;
        if (!reader_ && !reader_error_) {
            return; // no pass attached: the next attach submits them
        }
        const auto before = in_flight_;
        reads = take_submittable(now);
        if (reads.empty()) {
            return;
        }
        if (in_flight_ == 0) {
            busy_since_ = now;
        }
        // What each demand read finds ahead of it: the reads in flight and those submitted before it now.
        auto ahead = before;
        for (auto& r : reads) {
            if (r.read.priority == 0) {
                stats_.demand_queued_behind += ahead;
            }
            ++ahead;
        }
        in_flight_ += static_cast<std::uint32_t>(reads.size());
    }
    if (!reader_) {
        for (const auto& r : reads) {
            finished(r, *reader_error_);
        }
        return;
    }
    // One read per slab (splitting a slab into pieces read in parallel was measured: no lower latency, the
    // device's ~2 ms per request does not depend on its size here).
    reader_->hold_submissions();
    for (const auto& r : reads) {
        reader_->async_read_at(*r.read.file, r.read.offset, r.read.dest,
                               [this, r, alive = alive_, reader = reader_, memory = memory_](result<void> res) {
                                   if (alive->load()) {
                                       finished(r, res);
                                   }
                               });
    }
    reader_->release_submissions();
}

void read_scheduler::finished(const submitted_read& read, const result<void>& r) {
    const auto now = clock::now();
    bool more = false;
    {
        std::lock_guard lock(mu_);
        const double latency = std::chrono::duration<double>(now - read.started).count();
        stats_.latency_sum_s += latency;
        const auto us = static_cast<std::uint64_t>(latency * 1e6);
        const auto& bounds = read_stats::latency_bounds_us;
        const auto bucket =
            static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), us) - bounds.begin());
        ++stats_.latency_buckets[bucket];
        if (--in_flight_ == 0) {
            stats_.busy_s += std::chrono::duration<double>(now - busy_since_).count();
        }
        if (read.read.priority == 0) {
            ++stats_.demand_reads;
            stats_.demand_latency_s += std::chrono::duration<double>(now - read.enqueued).count();
        }
        if (r) {
            ++stats_.reads;
            stats_.bytes_read += read.read.dest.size();
        } else {
            ++stats_.read_failures;
        }
        // Priority order: a read ending makes room in the window for held predictions.
        more = order_.order == read_order::priority && reader_ && !queue_.empty() && !submit_posted_;
    }
    on_done_(read.read.tag, read.read.part, r);
    if (more) {
        submit_queued();
    }
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
        s.busy_s += std::chrono::duration<double>(clock::now() - busy_since_).count();
    }
    return s;
}

} // namespace sluice::experts
