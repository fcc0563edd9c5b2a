// Replaying a routing recording through the planned expert cache: the trace of router choices, the cold start
// left out, the hit rate and the disk traffic that follow.
#include "runtime/engine/routing_plan.hpp"

#include "runtime/experts/prediction_votes.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace sluice {
namespace {

/// The tokens of step `s` when `streams` streams replay `trace` at once: stream i starts at record i x tokens /
/// streams and goes on in record order, wrapping around.
void step_tokens(std::uint64_t tokens, std::uint32_t streams, std::uint64_t s, std::vector<std::uint64_t>& out) {
    out.clear();
    for (std::uint32_t i = 0; i < streams; ++i) {
        out.push_back((std::uint64_t{i} * tokens / streams + s) % tokens);
    }
}

/// The sorted distinct experts of `ids` into `out` (no_expert left out); with `limit` (> 0) and more distinct than
/// that, only the `limit` most frequent in `ids` (ties to the lower id), as the batch engine's prediction does.
/// One token's choice (`one_token`) keeps the router's order, as a single sequence's fetch does.
void distinct_ids(std::vector<std::uint16_t>& ids, std::uint32_t limit, bool one_token,
                  std::vector<std::uint16_t>& out) {
    std::erase(ids, experts::no_expert);
    out.clear();
    if (one_token) {
        out = ids;
        return;
    }
    std::sort(ids.begin(), ids.end());
    std::vector<std::pair<std::int64_t, std::uint16_t>> votes;
    experts::keep_most_voted(ids, limit, votes);
    out = ids;
}

/// The accesses of every step of the replay, each step's layers in order: a layer's distinct chosen experts over
/// the step's tokens, then (with `prefetch`) the next layer's experts predicted at it, read ahead as the cache does.
/// `step_ends[s]` is where step s's accesses end, `layer_ends` where each step's layer's accesses (its choice and
/// the prediction) end. Returns the steps.
std::uint64_t append_accesses(const experts::routing_trace& trace, replay_prefetch prefetch, replay_streams streams,
                              std::vector<experts::expert_access>& out, std::vector<std::size_t>& step_ends,
                              std::vector<std::size_t>& layer_ends) {
    const auto& g = trace.geometry();
    const std::uint32_t n = std::max(1u, streams.streams);
    const std::uint64_t steps = std::max<std::uint64_t>(1, trace.size() / n);
    std::vector<std::uint64_t> tokens;
    std::vector<std::uint16_t> ids, distinct;
    for (std::uint64_t s = 0; s < steps; ++s) {
        step_tokens(trace.size(), n, s, tokens);
        for (std::uint32_t l = 0; l < g.layers; ++l) {
            ids.clear();
            for (const auto t : tokens) {
                const auto chosen = trace.experts(t, l);
                ids.insert(ids.end(), chosen.begin(), chosen.end());
            }
            distinct_ids(ids, 0, n == 1, distinct);
            for (const auto e : distinct) {
                out.push_back({l, static_cast<std::int32_t>(e), false});
            }
            if (!prefetch.enabled || l + 1 == g.layers) {
                layer_ends.push_back(out.size());
                continue;
            }
            ids.clear();
            for (const auto t : tokens) {
                auto predicted = trace.predicted(t, l);
                if (prefetch.width > 0 && prefetch.width < predicted.size()) {
                    predicted = predicted.first(prefetch.width);
                }
                ids.insert(ids.end(), predicted.begin(), predicted.end());
            }
            distinct_ids(ids, streams.prediction_limit, n == 1, distinct);
            for (const auto e : distinct) {
                out.push_back({l + 1, static_cast<std::int32_t>(e), true});
            }
            if (prefetch.depth >= 2 && l + 2 < g.layers) {
                ids.clear();
                for (const auto t : tokens) {
                    const auto predicted2 = trace.predicted2(t, l);
                    ids.insert(ids.end(), predicted2.begin(), predicted2.end());
                }
                distinct_ids(ids, g.top_k, n == 1, distinct);
                for (const auto e : distinct) {
                    if (e != experts::no_expert) {
                        out.push_back({l + 2, static_cast<std::int32_t>(e), true});
                    }
                }
            }
            layer_ends.push_back(out.size());
        }
        step_ends.push_back(out.size());
    }
    return steps;
}

/// The first step after which `slots` distinct experts were chosen (the cache is then full: until then no policy
/// evicts), or nullopt when the replay chooses fewer.
std::optional<std::uint64_t> steps_to_fill(const experts::routing_geometry& g,
                                           std::span<const experts::expert_access> accesses,
                                           std::span<const std::size_t> step_ends, std::uint64_t slots) {
    std::vector<bool> seen(std::size_t{g.layers} * g.experts, false);
    std::uint64_t distinct = 0;
    std::size_t a = 0;
    for (std::uint64_t s = 0; s < step_ends.size(); ++s) {
        for (; a < step_ends[s]; ++a) {
            const auto key = std::size_t{accesses[a].layer} * g.experts + static_cast<std::size_t>(accesses[a].expert);
            if (!accesses[a].prefetch && !seen[key]) {
                seen[key] = true;
                ++distinct;
            }
        }
        if (distinct >= slots) {
            return s + 1;
        }
    }
    return std::nullopt;
}

/// Hits and misses of a cache of `slots` slots with `policy` over `accesses`.
experts::simulation simulate_cache(const experts::policy_spec& policy, std::uint32_t slots,
                                   const experts::routing_geometry& g, std::span<const experts::expert_access> accesses,
                                   std::vector<std::size_t>* reads = nullptr) {
    auto p = experts::make_policy(policy, slots, g.layers, g.experts);
    return experts::simulate(*p, slots, g.layers, g.experts, accesses, reads);
}

/// The reads at positions `reads` of `accesses` from `first` on, grouped into bursts by `layer_ends`.
read_pattern group_reads(std::span<const experts::expert_access> accesses, std::span<const std::size_t> reads,
                         std::span<const std::size_t> layer_ends, std::size_t first) {
    read_pattern out;
    auto r = std::lower_bound(reads.begin(), reads.end(), first);
    for (const auto end : layer_ends) {
        if (end <= first) {
            continue;
        }
        const auto before = out.reads.size();
        for (; r != reads.end() && *r < end; ++r) {
            out.reads.push_back(accesses[*r]);
        }
        if (out.reads.size() > before) {
            out.burst_ends.push_back(out.reads.size());
        }
    }
    return out;
}

} // namespace

result<routing_estimate> estimate_routing(const memory_plan& plan, const experts::expert_layout& layout,
                                          const experts::routing_trace& trace, experts::routing_geometry model,
                                          const experts::policy_spec& policy, replay_prefetch prefetch,
                                          const std::string& what, replay_streams streams, read_pattern* pattern) {
    const auto& g = trace.geometry();
    if (g != model) {
        return make_error(std::errc::invalid_argument,
                          what + ": recording of " + experts::to_string(g) + " (model \"" + trace.header().model_name +
                              "\") does not fit this model's " + experts::to_string(model));
    }
    if (trace.size() == 0) {
        return make_error(std::errc::invalid_argument, what + ": the recording holds no tokens");
    }
    routing_estimate e;
    e.policy = policy;
    e.prefetch = prefetch.enabled;
    e.prefetch_width = prefetch.enabled ? prefetch.width : 0;
    e.prefetch_depth = prefetch.enabled ? prefetch.depth : 0;
    e.tokens = trace.size();
    e.uniform_hit_rate = plan.read_bytes_per_token_cold > 0 && plan.streams()
                             ? 1.0 - static_cast<double>(plan.read_bytes_per_token_uniform) /
                                         static_cast<double>(plan.read_bytes_per_token_cold)
                             : 1.0;
    if (!plan.streams()) {
        e.measured_tokens = e.tokens; // everything is resident: every choice is a hit, nothing is read
        e.hit_rate = 1.0;
        return e;
    }
    // Warm-up: the steps until the cache is full; a replay that never fills it runs twice.
    const auto slots = static_cast<std::uint32_t>(std::min<std::uint64_t>(plan.cache_slots, UINT32_MAX));
    const std::uint32_t n = std::max(1u, streams.streams);
    e.streams = n;
    e.top_k = g.top_k;
    for (std::uint32_t l = 0; l < g.layers; ++l) {
        const auto first = trace.experts(0, l);
        const bool routed = std::any_of(first.begin(), first.end(), [](auto x) { return x != experts::no_expert; });
        e.routed_layers += routed ? 1 : 0;
    }
    std::vector<experts::expert_access> accesses;
    std::vector<std::size_t> step_ends;
    std::vector<std::size_t> layer_ends;
    const auto steps = append_accesses(trace, prefetch, streams, accesses, step_ends, layer_ends);
    const auto fill = steps_to_fill(g, accesses, step_ends, slots);
    std::size_t warm_accesses = 0;
    std::uint64_t warm_steps = 0;
    if (fill && *fill < steps) {
        warm_steps = *fill;
        warm_accesses = step_ends[*fill - 1];
    } else {
        e.second_pass = true;
        warm_steps = steps;
        warm_accesses = accesses.size();
        accesses.insert(accesses.end(), accesses.begin(), accesses.end());
        const auto bursts = layer_ends.size();
        for (std::size_t i = 0; i < bursts; ++i) {
            layer_ends.push_back(layer_ends[i] + warm_accesses);
        }
    }
    e.warmup_tokens = warm_steps * n;
    e.measured_steps = (e.second_pass ? 2 * steps : steps) - warm_steps;
    e.measured_tokens = e.measured_steps * n;
    // simulate() is online: the counts of the warm-up prefix alone are the prefix's share of the whole run.
    std::vector<std::size_t> read_at;
    const auto all = simulate_cache(policy, slots, g, accesses, pattern != nullptr ? &read_at : nullptr);
    if (pattern != nullptr) {
        *pattern = group_reads(accesses, read_at, layer_ends, warm_accesses);
    }
    const auto warm = simulate_cache(policy, slots, g, std::span(accesses).first(warm_accesses));
    e.hits = all.hits - warm.hits;
    e.misses = all.misses - warm.misses;
    e.prefetch_reads = all.prefetch_reads - warm.prefetch_reads;
    e.prefetch_used = all.prefetch_used - warm.prefetch_used;
    e.prefetch_wasted = all.prefetch_wasted - warm.prefetch_wasted;
    const auto per_step = [&](std::uint64_t count) {
        return static_cast<double>(count) / static_cast<double>(std::max<std::uint64_t>(e.measured_steps, 1));
    };
    e.distinct_per_step = per_step(e.hits + e.misses);
    e.misses_per_step = per_step(e.misses);
    e.prefetch_reads_per_step = per_step(e.prefetch_reads);
    e.hit_rate = e.hits + e.misses ? static_cast<double>(e.hits) / static_cast<double>(e.hits + e.misses) : 1.0;
    const auto reads = static_cast<double>(e.misses + e.prefetch_reads);
    e.read_bytes_per_token = static_cast<std::uint64_t>(
        std::llround(reads * static_cast<double>(layout.read_bytes) / static_cast<double>(e.measured_tokens)));
    const auto per_token = [&](std::uint64_t experts) {
        return static_cast<std::uint64_t>(
            std::llround(static_cast<double>(experts) * static_cast<double>(layout.read_bytes) /
                         static_cast<double>(e.measured_tokens)));
    };
    e.miss_bytes_per_token = per_token(e.misses);
    e.wasted_bytes_per_token = per_token(e.prefetch_wasted);
    e.tokens_per_s_bound = plan.disk_bandwidth > 0 && e.read_bytes_per_token > 0
                               ? plan.disk_bandwidth / static_cast<double>(e.read_bytes_per_token)
                               : 0.0;
    return e;
}

double expected_tokens_per_s(double compute_tokens_per_s, std::uint64_t read_bytes_per_token, double disk_bandwidth) {
    if (compute_tokens_per_s <= 0 || (read_bytes_per_token > 0 && disk_bandwidth <= 0)) {
        return 0.0;
    }
    const double disk_s = read_bytes_per_token > 0 ? static_cast<double>(read_bytes_per_token) / disk_bandwidth : 0.0;
    return 1.0 / (1.0 / compute_tokens_per_s + disk_s);
}

boost::json::object to_json(const routing_estimate& e) {
    return boost::json::object{
        {"policy", experts::to_string(e.policy)},
        {"prefetch", e.prefetch},
        {"prefetch_width", e.prefetch_width},
        {"prefetch_depth", e.prefetch_depth},
        {"tokens", e.tokens},
        {"warmup_tokens", e.warmup_tokens},
        {"measured_tokens", e.measured_tokens},
        {"second_pass", e.second_pass},
        {"hits", e.hits},
        {"misses", e.misses},
        {"demand_hit_rate", e.hit_rate},
        {"prefetch_reads", e.prefetch_reads},
        {"prefetch_used", e.prefetch_used},
        {"prefetch_wasted", e.prefetch_wasted},
        {"uniform_hit_rate", e.uniform_hit_rate},
        {"prefetch_accuracy",
         e.prefetch_used + e.prefetch_wasted
             ? static_cast<double>(e.prefetch_used) / static_cast<double>(e.prefetch_used + e.prefetch_wasted)
             : 0.0},
        {"read_bytes_per_token", e.read_bytes_per_token},
        {"miss_bytes_per_token", e.miss_bytes_per_token},
        {"wasted_prefetch_bytes_per_token", e.wasted_bytes_per_token},
        {"tokens_per_s_bound", e.tokens_per_s_bound},
        {"streams", e.streams},
        {"routed_layers", e.routed_layers},
        {"top_k", e.top_k},
        {"measured_steps", e.measured_steps},
        {"distinct_per_step", e.distinct_per_step},
        {"misses_per_step", e.misses_per_step},
        {"prefetch_reads_per_step", e.prefetch_reads_per_step},
        {"assumptions",
         "the recording's tokens one at a time (streams > 1: one token of each of that many streams per step, "
         "started at evenly spaced records, each layer's distinct experts fetched once per step and the union of "
         "the predictions read ahead), each step's layers in order, through one cache of cache_slots slots over "
         "all layers; the cold start (warmup_tokens) is not counted. A hit is a chosen expert found "
         "cached (a prefetched one counts, whether or not its read had finished). read_bytes_per_token counts "
         "misses and, with prefetch, the recorded next-layer predictions that were not cached. tokens_per_s_bound "
         "counts disk reads only (compute ignored) for one sequence decoding."},
    };
}

} // namespace sluice
