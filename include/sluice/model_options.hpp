// How a model is loaded and run (public): context, threads, memory budget, streaming and disk settings.
#pragma once

#include "sluice/io_options.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>

namespace sluice {

/// Elements of the per-sequence key/value cache.
enum class kv_cache_type {
    f16, ///< half the memory; what generation uses
    f32, ///< exact keys and values (fidelity checks)
};

/// How a streaming expert cache picks the expert to evict.
enum class expert_cache_policy {
    lru, ///< least recently used
    lfu, ///< least often chosen by the router (counts halved as they grow, so old habits fade), then LRU
};

/// How a model is loaded and run.
struct model_options {
    std::uint32_t n_ctx = 0;     ///< default context of its sessions; 0 = min(training context, 4096)
    std::size_t n_threads = 0;   ///< compute threads; 0 = one per hardware thread
    std::uint32_t n_batch = 256; ///< most tokens per forward step during prefill
    kv_cache_type kv_type = kv_cache_type::f16;
    io::reader_options io; ///< disk reader settings
    /// Bytes the model may hold in memory (weights, KV caches, buffers); 0 = 80% of MemAvailable. When the
    /// whole model does not fit, routed experts stream from disk through an expert cache.
    std::uint64_t memory_budget = 0;
    std::uint32_t n_seq = 1;   ///< sequences generating at once (caches the plan reserves)
    double disk_bandwidth = 0; ///< bytes/s for the plan's speed bound; 0 = a short probe when streaming
    bool prefetch = true;      ///< streaming: predict and read the next layer's experts ahead
    expert_cache_policy cache_policy = expert_cache_policy::lru; ///< streaming: which expert to evict
};

/// Called while weights load: bytes read so far of the total. Runs on the loading coroutine's executor.
using load_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

} // namespace sluice
