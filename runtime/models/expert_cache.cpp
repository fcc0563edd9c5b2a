// The expert cache: slots, the evictable (LRU) list, loads as three slab reads each submitted together, waiters
// woken when loads end, and the counters.
#include "runtime/models/expert_cache.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include <sys/mman.h>

namespace sluice::models {

namespace {

constexpr std::uint64_t page = 4096;
constexpr std::uint32_t no_layer = std::numeric_limits<std::uint32_t>::max();

} // namespace

result<cache_policy> parse_cache_policy(std::string_view name) {
    if (name == "lru") {
        return cache_policy::lru;
    }
    if (name == "lfu") {
        return cache_policy::lfu;
    }
    return make_error(std::errc::invalid_argument,
                      "unknown cache policy \"" + std::string(name) + "\" (expected lru or lfu)");
}

result<std::unique_ptr<expert_cache>> expert_cache::create(const gguf::model_files& files, expert_layout layout,
                                                           const expert_cache_options& options) {
    if (layout.total_count == 0 || layout.slot_bytes == 0) {
        return make_error(std::errc::invalid_argument, "expert cache: the model has no routed experts");
    }
    if (options.slots == 0) {
        return make_error(std::errc::invalid_argument, "expert cache: zero slots");
    }
    return std::unique_ptr<expert_cache>(new expert_cache(files, std::move(layout), options));
}

expert_cache::expert_cache(const gguf::model_files& files, expert_layout layout, const expert_cache_options& options)
    : files_(&files), layout_(std::move(layout)), prefetch_(options.prefetch), policy_(options.policy),
      io_options_(options.io) {
    const std::uint64_t n_slots = std::min(options.slots, layout_.total_count);
    pool_ = io::dma_buffer(static_cast<std::size_t>(n_slots * layout_.slot_bytes));
    pool_.advise_huge_pages();
    pool_.populate(); // the whole budget up front: no page faults (or zeroing) while decoding
    slots_.resize(static_cast<std::size_t>(n_slots));
    free_.reserve(slots_.size());
    for (std::size_t s = slots_.size(); s-- > 0;) {
        free_.push_back(static_cast<std::int32_t>(s));
    }
    for (const auto& l : layout_.layers) {
        max_experts_ = std::max(max_experts_, l.n_expert);
    }
    index_.assign(layout_.layers.size() * max_experts_, none);
    freq_.assign(index_.size(), 0);
    counters_.layers.resize(layout_.layers.size());
    counters_.slots = n_slots;
    counters_.slot_bytes = layout_.slot_bytes;
    to_submit_.reserve(3 * slots_.size());
}

expert_cache::~expert_cache() = default;

std::int32_t& expert_cache::slot_of(std::uint32_t layer, std::int32_t expert) noexcept {
    return index_[std::size_t{layer} * max_experts_ + static_cast<std::size_t>(expert)];
}

void expert_cache::unlink(std::int32_t s) noexcept {
    auto& x = slots_[static_cast<std::size_t>(s)];
    (x.prev == none ? lru_head_ : slots_[static_cast<std::size_t>(x.prev)].next) = x.next;
    (x.next == none ? lru_tail_ : slots_[static_cast<std::size_t>(x.next)].prev) = x.prev;
    x.prev = x.next = none;
}

void expert_cache::push_recent(std::int32_t s) noexcept {
    auto& x = slots_[static_cast<std::size_t>(s)];
    x.prev = lru_tail_;
    x.next = none;
    (lru_tail_ == none ? lru_head_ : slots_[static_cast<std::size_t>(lru_tail_)].next) = s;
    lru_tail_ = s;
}

std::int32_t expert_cache::take_victim(std::uint32_t avoid_layer) noexcept {
    if (!free_.empty()) {
        const auto s = free_.back();
        free_.pop_back();
        return s;
    }
    std::int32_t victim = none;
    std::uint32_t victim_freq = std::numeric_limits<std::uint32_t>::max();
    for (auto s = lru_head_; s != none; s = slots_[static_cast<std::size_t>(s)].next) {
        const auto& x = slots_[static_cast<std::size_t>(s)];
        const auto layer = static_cast<std::uint32_t>(x.layer);
        if (layer == avoid_layer) {
            continue;
        }
        if (policy_ == cache_policy::lru) {
            victim = s; // the least recent
            break;
        }
        // A prefetched expert not chosen yet has no count of its own: keep it until it had its chance.
        const auto f = x.prefetched ? std::numeric_limits<std::uint32_t>::max() - 1
                                    : freq_[std::size_t{layer} * max_experts_ + static_cast<std::size_t>(x.expert)];
        if (f < victim_freq) { // strictly: among equals the least recent wins
            victim = s;
            victim_freq = f;
        }
    }
    if (victim != none) {
        const auto s = victim;
        auto& x = slots_[static_cast<std::size_t>(s)];
        const auto layer = static_cast<std::uint32_t>(x.layer);
        unlink(s);
        slot_of(layer, x.expert) = none;
        ++counters_.layers[layer].evictions;
        ++counters_.evictions;
        if (x.prefetched) {
            ++counters_.prefetch_wasted;
        }
        --counters_.slots_filled;
        x = slot{};
        return s;
    }
    return none;
}

void expert_cache::pin(std::int32_t s, std::int32_t expert, expert_handles& out) noexcept {
    auto& x = slots_[static_cast<std::size_t>(s)];
    if (x.pins++ == 0) {
        unlink(s);
    }
    if (x.prefetched) {
        ++counters_.prefetch_used;
        x.prefetched = false;
    }
    const auto e = static_cast<std::size_t>(expert);
    out.gate[e] = x.ptr[0];
    out.up[e] = x.ptr[1];
    out.down[e] = x.ptr[2];
}

std::size_t expert_cache::try_pin(std::uint32_t layer, std::span<const std::int32_t> ids,
                                  std::span<expert_state> state, expert_handles& out) {
    const bool first = std::all_of(state.begin(), state.end(), [](expert_state s) { return s == expert_state::wanted; });
    std::lock_guard lock(mu_);
    auto& lc = counters_.layers[layer];
    std::size_t pinned = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (state[i] != expert_state::wanted) {
            continue;
        }
        const auto s = slot_of(layer, ids[i]);
        const bool ready = s != none && slots_[static_cast<std::size_t>(s)].state == slot_state::ready;
        if (first) {
            if (policy_ == cache_policy::lfu) {
                ++freq_[std::size_t{layer} * max_experts_ + static_cast<std::size_t>(ids[i])];
                if (++lookups_ >= 8 * freq_.size()) { // ageing: halve every count now and then
                    for (auto& f : freq_) {
                        f /= 2;
                    }
                    lookups_ = 0;
                }
            }
            ++(ready ? lc.hits : lc.misses);
            ++(ready ? counters_.hits : counters_.misses);
            if (!ready && s != none && slots_[static_cast<std::size_t>(s)].prefetched) {
                ++counters_.prefetch_used; // predicted right, but still being read
                slots_[static_cast<std::size_t>(s)].prefetched = false;
            }
        }
        if (ready) {
            pin(s, ids[i], out);
            state[i] = expert_state::pinned;
            ++pinned;
        }
    }
    return pinned;
}

void expert_cache::release(std::uint32_t layer, std::span<const std::int32_t> ids,
                           std::span<expert_state> state) noexcept {
    bool freed = false;
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (state[i] != expert_state::pinned) {
                continue;
            }
            state[i] = expert_state::done;
            const auto s = slot_of(layer, ids[i]);
            auto& x = slots_[static_cast<std::size_t>(s)];
            if (--x.pins == 0) {
                push_recent(s);
                freed = true;
            }
        }
        freed = freed && waiting_ > 0;
    }
    if (freed) { // an acquire may be waiting for a slot to become evictable
        boost::asio::post(executor_, [this] { wake_waiters(); });
    }
}

void expert_cache::request(std::uint32_t layer, std::span<const std::int32_t> ids, std::span<const expert_state> state,
                           std::uint32_t next_layer, std::span<const std::int32_t> next_ids) {
    // Only what nobody is reading yet goes to the executor: waking its thread costs the compute threads a
    // core for a moment (measured: posting every layer halved decode speed at a 97% hit rate on 2 cores).
    std::vector<std::int32_t> missing;
    std::vector<std::int32_t> predicted;
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (state[i] == expert_state::wanted && slot_of(layer, ids[i]) == none) {
                missing.push_back(ids[i]);
            }
        }
        if (prefetch_ && next_layer < layout_.layers.size() && layout_.layers[next_layer].n_expert > 0) {
            for (const auto id : next_ids) {
                if (slot_of(next_layer, id) == none) {
                    predicted.push_back(id);
                }
            }
        }
    }
    if (missing.empty() && predicted.empty()) {
        return;
    }
    boost::asio::post(executor_, [this, layer, next_layer, missing = std::move(missing),
                                  predicted = std::move(predicted)] {
        load_missing(layer, missing, next_layer, predicted);
    });
}

bool expert_cache::start_load(std::uint32_t layer, std::int32_t expert, bool prefetch, std::uint32_t avoid_layer) {
    if (slot_of(layer, expert) != none) {
        return true; // loading or loaded already: the read in flight is shared
    }
    const auto s = take_victim(avoid_layer);
    if (s == none) {
        return false;
    }
    failures_.erase({layer, expert});
    auto& x = slots_[static_cast<std::size_t>(s)];
    x.layer = static_cast<std::int32_t>(layer);
    x.expert = expert;
    x.state = slot_state::loading;
    x.parts_left = 3;
    x.failed = false;
    x.prefetched = prefetch;
    slot_of(layer, expert) = s;
    ++counters_.slots_filled;
    if (prefetch) {
        ++counters_.prefetch_issued;
    }
    for (std::uint32_t part = 0; part < 3; ++part) {
        to_submit_.push_back({s, part});
    }
    return true;
}

void expert_cache::load_missing(std::uint32_t layer, const std::vector<std::int32_t>& ids, std::uint32_t next_layer,
                                const std::vector<std::int32_t>& next_ids) {
    {
        std::lock_guard lock(mu_);
        for (const auto id : ids) {
            start_load(layer, id, false, no_layer);
        }
        for (const auto id : next_ids) {
            if (!start_load(next_layer, id, true, layer)) {
                break; // no room without evicting what this layer is using
            }
        }
    }
    submit_pending();
}

void expert_cache::submit_pending() {
    if (!reader_) {
        return;
    }
    std::vector<read_part> parts;
    {
        std::lock_guard lock(mu_);
        parts.swap(to_submit_);
        if (!parts.empty() && in_flight_ == 0) {
            busy_since_ = std::chrono::steady_clock::now();
        }
        in_flight_ += static_cast<std::uint32_t>(parts.size());
    }
    if (parts.empty()) {
        return;
    }
    // One read per slab (splitting a slab into pieces read in parallel was measured: no lower latency, the
    // device's ~2 ms per request does not depend on its size here).
    const auto started = std::chrono::steady_clock::now();
    reader_->hold_submissions();
    for (const auto part : parts) {
        auto& x = slots_[static_cast<std::size_t>(part.slot)];
        const auto& ll = layout_.layers[static_cast<std::size_t>(x.layer)];
        const auto& slab = ll.slabs[part.part];
        const auto& f = files_->parts()[slab.split].file;
        const std::uint64_t offset = slab.offset + static_cast<std::uint64_t>(x.expert) * slab.bytes;
        const std::uint64_t lo = offset & ~(page - 1);
        const std::uint64_t hi = std::min<std::uint64_t>((offset + slab.bytes + page - 1) & ~(page - 1), f.size());
        // (hi < offset + bytes only for a file shorter than its header says: the read then fails at its end.)
        std::byte* base = pool_.data() + static_cast<std::size_t>(part.slot) * layout_.slot_bytes +
                          layout_.region_offset(static_cast<std::uint32_t>(x.layer), part.part);
        x.ptr[part.part] = base + (offset - lo);
        // The last expert of a file may end short of a page: its range stops at the end of the file.
        const std::span<std::byte> dest(base, static_cast<std::size_t>(std::max(hi, offset + slab.bytes) - lo));
        const auto bytes = dest.size();
        reader_->async_read_at(f, lo, dest, [this, part, bytes, started](result<void> r) {
            part_done(part, bytes, started, r);
        });
    }
    reader_->release_submissions();
}

void expert_cache::part_done(read_part part, std::size_t bytes, std::chrono::steady_clock::time_point started,
                             const result<void>& r) {
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mu_);
        const double latency = std::chrono::duration<double>(now - started).count();
        counters_.latency_sum_s += latency;
        const auto us = static_cast<std::uint64_t>(latency * 1e6);
        const auto& bounds = expert_cache_counters::latency_bounds_us;
        const auto bucket = static_cast<std::size_t>(
            std::lower_bound(bounds.begin(), bounds.end(), us) - bounds.begin());
        ++counters_.latency_buckets[bucket];
        if (--in_flight_ == 0) {
            counters_.busy_s += std::chrono::duration<double>(now - busy_since_).count();
        }
        auto& x = slots_[static_cast<std::size_t>(part.slot)];
        const auto layer = static_cast<std::uint32_t>(x.layer);
        if (r) {
            ++counters_.reads;
            counters_.bytes_read += bytes;
        } else {
            ++counters_.read_failures;
            if (!x.failed && !x.prefetched) {
                failures_[{layer, x.expert}] = r.error();
            }
            x.failed = true;
        }
        if (--x.parts_left == 0) {
            if (x.failed) {
                slot_of(layer, x.expert) = none;
                --counters_.slots_filled;
                x = slot{};
                free_.push_back(part.slot);
            } else {
                x.state = slot_state::ready;
                push_recent(part.slot);
            }
        }
    }
    wake_waiters();
    if (attached_ == 0) {
        boost::asio::post(executor_, [this] { drop_idle_reader(); });
    }
}

void expert_cache::wake_waiters() {
    auto waiting = std::move(waiters_);
    waiters_.clear();
    for (auto* t : waiting) {
        t->cancel();
    }
}

boost::asio::awaitable<result<void>> expert_cache::acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                           std::span<expert_state> state, expert_handles& out) {
    if (reader_failed_) {
        co_return reader_error_;
    }
    auto executor = co_await boost::asio::this_coro::executor;
    std::vector<std::int32_t> to_load;
    while (true) {
        std::size_t pinned = 0;
        std::optional<error> failed;
        to_load.clear();
        {
            std::lock_guard lock(mu_);
            for (std::size_t i = 0; i < ids.size(); ++i) {
                if (state[i] != expert_state::wanted) {
                    continue;
                }
                const auto s = slot_of(layer, ids[i]);
                if (s != none && slots_[static_cast<std::size_t>(s)].state == slot_state::ready) {
                    pin(s, ids[i], out);
                    state[i] = expert_state::pinned;
                    ++pinned;
                } else if (s == none) {
                    if (auto f = failures_.find({layer, ids[i]}); f != failures_.end()) {
                        failed = f->second;
                        failures_.erase(f);
                    } else {
                        to_load.push_back(ids[i]);
                    }
                }
            }
        }
        if (failed) {
            // Nothing stays pinned by a failed acquire: the pass that called it ends with the error.
            release(layer, ids, state);
            co_return *failed;
        }
        if (pinned > 0) {
            co_return result<void>{};
        }
        if (!to_load.empty()) {
            {
                std::lock_guard lock(mu_);
                for (const auto id : to_load) {
                    start_load(layer, id, false, no_layer);
                }
            }
            submit_pending();
        }
        boost::asio::steady_timer timer(executor, boost::asio::steady_timer::time_point::max());
        waiters_.push_back(&timer);
        {
            std::lock_guard lock(mu_);
            ++waiting_;
        }
        boost::system::error_code ec;
        auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ec);
        co_await timer.async_wait(token);
        {
            std::lock_guard lock(mu_);
            --waiting_;
        }
        std::erase(waiters_, &timer);
        const auto cs = co_await boost::asio::this_coro::cancellation_state;
        if (cs.cancelled() != boost::asio::cancellation_type::none) {
            co_return make_error(std::errc::operation_canceled, "cancelled while reading experts");
        }
    }
}

void expert_cache::attach(const boost::asio::any_io_executor& executor) {
    ++attached_;
    if (reader_) {
        return; // another pass is attached, or reads are still finishing, on this executor
    }
    auto reader = io::make_reader(executor, io_options_);
    executor_ = executor;
    if (!reader) {
        reader_failed_ = true;
        reader_error_ = reader.error().with_context("expert cache");
        return;
    }
    reader_failed_ = false;
    reader_ = std::move(*reader);
    submit_pending(); // loads asked for after the last pass let its reader go
}

void expert_cache::detach() noexcept {
    if (attached_ > 0) {
        --attached_;
    }
    drop_idle_reader();
}

void expert_cache::drop_idle_reader() noexcept {
    bool idle = false;
    {
        std::lock_guard lock(mu_);
        idle = attached_ == 0 && in_flight_ == 0 && to_submit_.empty();
    }
    if (idle) {
        reader_.reset();
    }
}

void expert_cache::count_tokens(std::uint64_t n) noexcept {
    std::lock_guard lock(mu_);
    counters_.tokens += n;
}

expert_cache_counters expert_cache::counters() const {
    std::lock_guard lock(mu_);
    auto c = counters_;
    if (in_flight_ > 0) {
        c.busy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
    }
    return c;
}

} // namespace sluice::models
