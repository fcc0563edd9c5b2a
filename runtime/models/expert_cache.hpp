// The expert cache: a fixed pool of slots, allocated once, into which routed experts are read from the model
// file with O_DIRECT (io_uring) on demand and ahead of need, with in-flight deduplication, pinning while in
// use, LRU replacement and counters for everything it does.
#pragma once

#include "io/dma_buffer.hpp"
#include "io/reader.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/models/expert_layout.hpp"
#include "runtime/models/expert_source.hpp"

#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice::models {

/// How the cache picks the expert to evict (among those not in use).
enum class cache_policy {
    lru, ///< least recently used
    lfu, ///< least often chosen by the router (counts halved as they grow, so old habits fade), then LRU
};

/// Parses "lru" or "lfu".
result<cache_policy> parse_cache_policy(std::string_view name);

/// Settings of an expert cache.
struct expert_cache_options {
    std::uint64_t slots = 0; ///< experts held at once (at least 1; see memory_plan)
    bool prefetch = true;    ///< read the predicted experts of the next layer ahead
    cache_policy policy = cache_policy::lru;
    io::reader_options io;   ///< the reader it makes on the executor it is attached to
};

/// Per-layer cache counters.
struct expert_layer_counters {
    std::uint64_t hits = 0;      ///< chosen experts found in the cache at their first lookup
    std::uint64_t misses = 0;    ///< chosen experts not (yet) there: read, or still being read
    std::uint64_t evictions = 0; ///< experts of this layer evicted to make room
};

/// Everything the cache has counted since it was made (monotonic).
struct expert_cache_counters {
    /// Upper bounds of the read-latency histogram buckets, in microseconds (the last bucket is unbounded).
    static constexpr std::array<std::uint32_t, 11> latency_bounds_us{100,   250,   500,    1000,   2500,  5000,
                                                                     10000, 25000, 50000, 100000, 250000};
    std::uint64_t reads = 0;         ///< slab reads completed (three per expert)
    std::uint64_t read_failures = 0; ///< slab reads that failed
    std::uint64_t bytes_read = 0;    ///< bytes those reads delivered
    std::array<std::uint64_t, latency_bounds_us.size() + 1> latency_buckets{}; ///< non-cumulative counts
    double latency_sum_s = 0;        ///< sum of read latencies
    double busy_s = 0;               ///< time with at least one read in flight
    std::uint64_t hits = 0, misses = 0, evictions = 0; ///< sums over layers
    std::vector<expert_layer_counters> layers;
    std::uint64_t prefetch_issued = 0; ///< predicted experts read ahead
    std::uint64_t prefetch_used = 0;   ///< of those, chosen before being evicted
    std::uint64_t prefetch_wasted = 0; ///< of those, evicted without being chosen
    std::uint64_t tokens = 0;          ///< tokens that went through the model
    std::uint64_t slots = 0;           ///< slots in the pool
    std::uint64_t slot_bytes = 0;      ///< bytes of one slot
    std::uint64_t slots_filled = 0;    ///< slots holding an expert now

    /// Bytes read per token (0 before the first token).
    [[nodiscard]] double bytes_per_token() const noexcept {
        return tokens ? static_cast<double>(bytes_read) / static_cast<double>(tokens) : 0.0;
    }
    /// Read throughput while reads were in flight, bytes/s (0 before the first read).
    [[nodiscard]] double read_bytes_per_s() const noexcept {
        return busy_s > 0 ? static_cast<double>(bytes_read) / busy_s : 0.0;
    }
    /// Fraction of first lookups that hit.
    [[nodiscard]] double hit_rate() const noexcept {
        return hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
    }
    /// Fraction of prefetched experts that were chosen (of those decided: used or wasted).
    [[nodiscard]] double prefetch_accuracy() const noexcept {
        const auto decided = prefetch_used + prefetch_wasted;
        return decided ? static_cast<double>(prefetch_used) / static_cast<double>(decided) : 0.0;
    }
};

/// Streams routed experts from the model files through a fixed pool of slots. Lookups from compute threads
/// (try_pin, release, request) take a short lock; reads run and complete on the executor given to `attach`,
/// which must be one thread at a time (a single-threaded io_context) and the same for every pass attached at
/// once. The reader lives only while passes are attached or reads are in flight, so the cache never holds on
/// to an io_context that is gone. Destroy it only with no forward pass running.
class expert_cache final : public expert_source {
public:
    /// Allocates the pool (`options.slots` slots of `layout.slot_bytes`). Errors: zero slots, a model
    /// without routed experts.
    static result<std::unique_ptr<expert_cache>> create(const gguf::model_files& files, expert_layout layout,
                                                        const expert_cache_options& options);
    ~expert_cache() override;
    expert_cache(const expert_cache&) = delete;
    expert_cache& operator=(const expert_cache&) = delete;

    std::size_t try_pin(std::uint32_t layer, std::span<const std::int32_t> ids, std::span<expert_state> state,
                        expert_handles& out) override;
    void request(std::uint32_t layer, std::span<const std::int32_t> ids, std::span<const expert_state> state,
                 std::uint32_t next_layer, std::span<const std::int32_t> next_ids) override;
    boost::asio::awaitable<result<void>> acquire(std::uint32_t layer, std::span<const std::int32_t> ids,
                                                 std::span<expert_state> state, expert_handles& out) override;
    void release(std::uint32_t layer, std::span<const std::int32_t> ids,
                 std::span<expert_state> state) noexcept override;
    [[nodiscard]] bool wants_prediction() const noexcept override { return prefetch_; }
    void attach(const boost::asio::any_io_executor& executor) override;
    void detach() noexcept override;
    void count_tokens(std::uint64_t n) noexcept override;

    /// A consistent snapshot of the counters; any thread.
    [[nodiscard]] expert_cache_counters counters() const;
    [[nodiscard]] const expert_layout& layout() const noexcept { return layout_; }

private:
    enum class slot_state : std::uint8_t { empty, loading, ready };
    static constexpr std::int32_t none = -1;
    struct slot {
        std::int32_t layer = none, expert = none;
        slot_state state = slot_state::empty;
        std::uint32_t pins = 0;
        std::uint8_t parts_left = 0;    ///< slab reads still running
        bool failed = false;            ///< a slab read of the current load failed
        bool prefetched = false;        ///< read by prediction and not chosen since
        std::int32_t prev = none, next = none; ///< the evictable list (ready, unpinned), least recent first
        std::array<const std::byte*, 3> ptr{};  ///< the slabs inside the slot's memory
    };
    struct read_part {
        std::int32_t slot;
        std::uint32_t part;
    };

    expert_cache(const gguf::model_files& files, expert_layout layout, const expert_cache_options& options);

    // Under mu_.
    [[nodiscard]] std::int32_t& slot_of(std::uint32_t layer, std::int32_t expert) noexcept;
    void unlink(std::int32_t s) noexcept;
    void push_recent(std::int32_t s) noexcept;
    std::int32_t take_victim(std::uint32_t avoid_layer) noexcept;
    void pin(std::int32_t s, std::int32_t expert, expert_handles& out) noexcept;
    bool start_load(std::uint32_t layer, std::int32_t expert, bool prefetch, std::uint32_t avoid_layer);

    // On the executor.
    void load_missing(std::uint32_t layer, const std::vector<std::int32_t>& ids, std::uint32_t next_layer,
                      const std::vector<std::int32_t>& next_ids);
    void submit_pending();
    void part_done(read_part part, std::size_t bytes, std::chrono::steady_clock::time_point started,
                   const result<void>& r);
    void wake_waiters();
    void drop_idle_reader() noexcept;

    const gguf::model_files* files_;
    expert_layout layout_;
    bool prefetch_;
    cache_policy policy_;
    io::reader_options io_options_;
    io::dma_buffer pool_;

    mutable std::mutex mu_;
    std::vector<slot> slots_;
    std::vector<std::int32_t> index_; ///< [layer * max_experts + expert] -> slot or none
    std::vector<std::uint32_t> freq_; ///< [layer * max_experts + expert] -> times chosen (lfu), halved as it grows
    std::uint64_t lookups_ = 0;       ///< choices counted since the last halving
    std::uint32_t max_experts_ = 0;
    std::int32_t lru_head_ = none, lru_tail_ = none;
    std::vector<std::int32_t> free_;
    std::map<std::pair<std::uint32_t, std::int32_t>, error> failures_; ///< failed loads not yet reported
    std::vector<read_part> to_submit_;
    expert_cache_counters counters_;
    std::uint32_t in_flight_ = 0;
    std::uint32_t waiting_ = 0; ///< acquires waiting
    std::chrono::steady_clock::time_point busy_since_;

    // Executor side (one thread).
    boost::asio::any_io_executor executor_;
    std::unique_ptr<io::reader> reader_; ///< exists while a pass is attached or reads are in flight
    std::uint32_t attached_ = 0;         ///< forward passes between attach and detach
    error reader_error_;
    bool reader_failed_ = false;
    std::vector<boost::asio::steady_timer*> waiters_;
};

} // namespace sluice::models
