// What an expert cache has counted since it was made: reads (from the read scheduler), hits, misses, evictions
// per layer, prefetches issued, used and wasted, tokens, and the pool's fill.
#pragma once

#include "runtime/experts/read_scheduler.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::experts {

/// Per-layer cache counters.
struct expert_layer_counters {
    std::uint64_t hits = 0;      ///< chosen experts found in memory when fetched
    std::uint64_t misses = 0;    ///< chosen experts not (yet) there: read, or still being read
    std::uint64_t evictions = 0; ///< experts of this layer evicted to make room
};

/// Everything an expert cache has counted (monotonic, but for `slots_filled`). `reads` counts slab reads (one
/// per part of an expert).
struct expert_cache_counters : read_stats {
    std::uint64_t hits = 0, misses = 0, evictions = 0; ///< sums over layers
    std::vector<expert_layer_counters> layers;
    std::uint64_t prefetch_issued = 0; ///< predicted experts read ahead (every depth)
    std::uint64_t prefetch_used = 0;   ///< of those, chosen before being evicted
    std::uint64_t prefetch_wasted = 0; ///< of those, evicted without being chosen
    /// The part of the three above predicted two layers ahead (prefetch depth 2): read by that prediction (not
    /// already in memory or being read), then chosen or evicted unchosen.
    std::uint64_t prefetch2_issued = 0, prefetch2_used = 0, prefetch2_wasted = 0;
    /// Read order priority: predicted experts whose reads were still held in the queue when their prediction
    /// was let go of (its layer came, or a nearer prediction replaced it) and nobody else wanted them: never
    /// read, their slots emptied. Part of prefetch_issued, neither used nor wasted; depth 2's part apart.
    std::uint64_t prefetch_dropped = 0, prefetch2_dropped = 0;
    /// Chosen experts whose read was asked for as a prediction and had not started when their layer fetched
    /// them: priority order made those reads demand reads.
    std::uint64_t prefetch_promoted = 0;
    std::uint64_t tokens = 0;       ///< tokens that went through the model
    std::uint64_t slots = 0;        ///< slots in the pool
    std::uint64_t slot_bytes = 0;   ///< bytes of one slot
    std::uint64_t slots_filled = 0; ///< slots holding (or being filled with) an expert now
    std::string last_read_failure;  ///< the message of the last expert read that failed (read_failures)

    /// Bytes read per token (0 before the first token).
    [[nodiscard]] double bytes_per_token() const noexcept {
        return tokens ? static_cast<double>(bytes_read) / static_cast<double>(tokens) : 0.0;
    }
    /// Read throughput while reads were in flight, bytes/s (0 before the first read).
    [[nodiscard]] double read_bytes_per_s() const noexcept {
        return busy_s > 0 ? static_cast<double>(bytes_read) / busy_s : 0.0;
    }
    /// Fraction of fetched experts that were in memory.
    [[nodiscard]] double hit_rate() const noexcept {
        return hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
    }
    /// Fraction of prefetched experts that were chosen (of those decided: used or wasted).
    [[nodiscard]] double prefetch_accuracy() const noexcept { return share(prefetch_used, prefetch_wasted); }
    /// The same for the next layer's prediction alone (depth 1).
    [[nodiscard]] double prefetch1_accuracy() const noexcept {
        return share(prefetch_used - prefetch2_used, prefetch_wasted - prefetch2_wasted);
    }
    /// The same for the prediction two layers ahead alone (depth 2).
    [[nodiscard]] double prefetch2_accuracy() const noexcept { return share(prefetch2_used, prefetch2_wasted); }

private:
    static double share(std::uint64_t used, std::uint64_t wasted) noexcept {
        return used + wasted ? static_cast<double>(used) / static_cast<double>(used + wasted) : 0.0;
    }
};

} // namespace sluice::experts
