// The memory plan under a recorded workload: a routing recording replayed through the planned expert cache
// (its slot count, a replacement policy, `replacement_policy::simulate`) gives the demand hit rate, the disk
// bytes a token reads and the speed bound under that routing, where the plan itself assumes uniform routing.
#pragma once

#include "runtime/engine/memory_plan.hpp"
#include "runtime/experts/replacement_policy.hpp"
#include "runtime/experts/routing_trace.hpp"
#include "sluice/error.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

/// What the planned cache does with a recording's routing.
struct routing_estimate {
    experts::policy_spec policy;
    bool prefetch = true;                   ///< the recording's next-layer predictions were read ahead
    std::uint32_t prefetch_width = 0;       ///< the first this many of each token's prediction were read (0: all top_k)
    std::uint32_t prefetch_depth = 1;       ///< 2: the recording's predictions two layers ahead were read too
    std::uint64_t tokens = 0;               ///< token records in the recording
    std::uint64_t warmup_tokens = 0;        ///< tokens replayed before the cache was full (not counted)
    std::uint64_t measured_tokens = 0;      ///< tokens the rates below count
    bool second_pass = false;               ///< the recording was replayed twice (the cache never filled in one pass)
    std::uint64_t hits = 0;                 ///< chosen experts found in the cache, over the measured tokens
    std::uint64_t misses = 0;               ///< chosen experts read from disk, over the measured tokens
    std::uint64_t prefetch_reads = 0;       ///< predicted experts read ahead, over the measured tokens
    std::uint64_t prefetch_used = 0;        ///< of those, chosen while still cached
    std::uint64_t prefetch_wasted = 0;      ///< evicted before anyone chose them
    double hit_rate = 0;                    ///< hits / (hits + misses); 1 when everything is resident
    double uniform_hit_rate = 0;            ///< the plan's own assumption, for comparison
    std::uint64_t read_bytes_per_token = 0; ///< (misses + prefetch reads) x one expert's read bytes, per token
    std::uint64_t miss_bytes_per_token = 0; ///< misses x one expert's read bytes, per token
    std::uint64_t wasted_bytes_per_token = 0; ///< prefetch_wasted x one expert's read bytes, per token
    double tokens_per_s_bound = 0;            ///< plan.disk_bandwidth / read_bytes_per_token (0: unknown or none)
    std::uint32_t streams = 1;                ///< tokens per step: concurrent sequences replayed as one batch step
    std::uint32_t routed_layers = 0;    ///< layers the recording routes (a step chooses at most this x streams x top_k)
    std::uint32_t top_k = 0;            ///< experts each token chooses per layer
    std::uint64_t measured_steps = 0;   ///< steps the rates count (measured_tokens / streams)
    double distinct_per_step = 0;       ///< mean distinct experts a step chose (the union over its tokens)
    double misses_per_step = 0;         ///< mean chosen experts a step read from disk
    double prefetch_reads_per_step = 0; ///< mean predicted experts a step read ahead
};

/// How the replay reads ahead: whether, and how many of each token's recorded next-layer prediction (the first
/// `width` in the router's order; 0: all top_k).
struct replay_prefetch {
    bool enabled = true;
    std::uint32_t width = 0;
    /// 2: also each token's recorded prediction two layers ahead (version-2 recordings), read after the next
    /// layer's, at most top_k experts per step (the most predicted), as the runtime's --prefetch-depth 2 does.
    std::uint32_t depth = 1;
};

/// The disk reads of a replay after its warm-up, in the order the cache issues them: one burst per token and layer
/// (that layer's misses, then the next layer's predicted experts read ahead), `burst_ends[i]` the end of burst i
/// in `reads` (bursts without reads are left out).
struct read_pattern {
    std::vector<experts::expert_access> reads;
    std::vector<std::size_t> burst_ends;
};

/// How many sequences a replay runs at once, as the batch engine does: each step takes one token of each of
/// `streams` streams (stream i starts at record i x tokens / streams and goes on in record order, wrapping), fetches
/// each layer's distinct chosen experts once, and reads ahead the union of the tokens' next-layer predictions, the
/// `prediction_limit` most predicted when there are more (0: all).
struct replay_streams {
    std::uint32_t streams = 1;
    std::uint32_t prediction_limit = 0;
};

/// Replays `trace` through the cache `plan` sizes (`layout` gives one expert's read bytes) with `policy`: every
/// step's layers in order (a step is one token, or one token of each stream), each layer's distinct chosen experts,
/// then (`prefetch`) the next layer's recorded prediction read ahead, one pool of `plan.cache_slots` slots over all
/// layers. The cold start (steps until every slot holds an expert) is left out; when one pass never fills the cache
/// the recording is replayed again and the second pass is counted, as a replay that wraps around would. With
/// `pattern`, the measured part's reads are stored there (read_pattern: one burst per step and layer). Errors: a
/// recording whose geometry is not `model`'s ("run.routing: recording of 2 layers x 8 experts, top-2 (model
/// "tiny") does not fit this model's 4 layers x 16 experts, top-4"), an empty recording. `what` names the file.
result<routing_estimate> estimate_routing(const memory_plan& plan, const experts::expert_layout& layout,
                                          const experts::routing_trace& trace, experts::routing_geometry model,
                                          const experts::policy_spec& policy, replay_prefetch prefetch,
                                          const std::string& what, replay_streams streams = {},
                                          read_pattern* pattern = nullptr);

/// Decode tokens/s of one sequence when each token computes for 1 / `compute_tokens_per_s` seconds (the model's
/// decode speed with its experts in memory) and then waits for `read_bytes_per_token` at `disk_bandwidth` bytes/s,
/// the two not overlapping: 1 / (1 / compute + bytes / bandwidth). 0 when the compute speed is unknown (0), or
/// bytes are read at an unknown bandwidth.
double expected_tokens_per_s(double compute_tokens_per_s, std::uint64_t read_bytes_per_token, double disk_bandwidth);

/// The estimate as JSON (the keys are listed in docs/STREAMING.md).
boost::json::object to_json(const routing_estimate& e);

} // namespace sluice
