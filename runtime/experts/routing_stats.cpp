// Per-layer statistics of a routing recording.
#include "runtime/experts/routing_stats.hpp"

#include "runtime/experts/replacement_policy.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace sluice::experts {
namespace {

// Shares of `a` (top_k ids, no_expert skipped) that appear in `b`.
double overlap(std::span<const std::uint16_t> a, std::span<const std::uint16_t> b) {
    std::size_t n = 0, found = 0;
    for (const auto e : a) {
        if (e == no_expert) {
            continue;
        }
        ++n;
        found += std::find(b.begin(), b.end(), e) != b.end() ? 1 : 0;
    }
    return n ? static_cast<double>(found) / static_cast<double>(n) : 0.0;
}

// Concentration of one layer's picks: the top expert's share and the fewest experts holding 90%.
void concentration(const routing_trace& t, std::uint32_t l, layer_routing_stats& out) {
    const auto& g = t.geometry();
    std::vector<std::uint64_t> count(g.experts, 0);
    for (std::uint64_t i = 0; i < t.size(); ++i) {
        for (const auto e : t.experts(i, l)) {
            if (e != no_expert) {
                ++count[e];
                ++out.picks;
            }
        }
    }
    std::sort(count.begin(), count.end(), std::greater<>());
    out.top_share = out.picks ? static_cast<double>(count[0]) / static_cast<double>(out.picks) : 0.0;
    std::uint64_t sum = 0;
    std::size_t m = 0;
    while (m < count.size() && static_cast<double>(sum) < 0.9 * static_cast<double>(out.picks)) {
        sum += count[m++];
    }
    out.experts_for_90 = static_cast<double>(m) / static_cast<double>(g.experts);
}

// Reuse from the previous token of the same sequence, and recall of the predictions made one and two layers before.
void reuse_and_recall(const routing_trace& t, std::uint32_t l, layer_routing_stats& out) {
    double reuse = 0, recall = 0, recall2 = 0;
    for (std::uint64_t i = 0; i < t.size(); ++i) {
        if (i > 0 && t.sequence(i) == t.sequence(i - 1) && t.position(i) == t.position(i - 1) + 1) {
            reuse += overlap(t.experts(i, l), t.experts(i - 1, l));
            ++out.reuse_pairs;
        }
        if (l > 0 && t.predicted(i, l - 1)[0] != no_expert) {
            recall += overlap(t.experts(i, l), t.predicted(i, l - 1));
            ++out.predicted;
        }
        if (l > 1 && t.predicted2(i, l - 2)[0] != no_expert) {
            recall2 += overlap(t.experts(i, l), t.predicted2(i, l - 2));
            ++out.predicted2;
        }
    }
    out.prediction2_recall = out.predicted2 ? recall2 / static_cast<double>(out.predicted2) : 0.0;
    out.reuse = out.reuse_pairs ? reuse / static_cast<double>(out.reuse_pairs) : 0.0;
    out.prediction_recall = out.predicted ? recall / static_cast<double>(out.predicted) : 0.0;
}

// A per-layer LRU cache of each simulated size over the layer's picks in recorded order.
void lru(const routing_trace& t, std::uint32_t l, layer_routing_stats& out) {
    const auto& g = t.geometry();
    std::vector<expert_access> trace;
    trace.reserve(t.size() * g.top_k);
    for (std::uint64_t i = 0; i < t.size(); ++i) {
        for (const auto e : t.experts(i, l)) {
            if (e != no_expert) {
                trace.push_back({0, e});
            }
        }
    }
    for (std::size_t c = 0; c < routing_cache_fractions.size(); ++c) {
        const auto slots = std::max<std::uint32_t>(
            1, static_cast<std::uint32_t>(std::lround(routing_cache_fractions[c] * g.experts)));
        auto policy = make_policy(cache_policy::lru, slots, 1, g.experts);
        out.lru_slots[c] = slots;
        out.lru_hit_rate[c] = simulate(*policy, slots, 1, g.experts, trace).hit_rate();
    }
}

} // namespace

std::vector<layer_routing_stats> routing_statistics(const routing_trace& trace) {
    std::vector<layer_routing_stats> out;
    for (std::uint32_t l = 0; l < trace.geometry().layers; ++l) {
        layer_routing_stats s;
        s.layer = l;
        concentration(trace, l, s);
        if (s.picks == 0) {
            continue;
        }
        reuse_and_recall(trace, l, s);
        lru(trace, l, s);
        out.push_back(s);
    }
    return out;
}

layer_routing_stats mean_statistics(const std::vector<layer_routing_stats>& layers) {
    layer_routing_stats m;
    m.layer = static_cast<std::uint32_t>(layers.size());
    if (layers.empty()) {
        return m;
    }
    const auto n = static_cast<double>(layers.size());
    std::size_t with_prediction = 0, with_prediction2 = 0;
    for (const auto& s : layers) {
        m.picks += s.picks;
        m.top_share += s.top_share / n;
        m.experts_for_90 += s.experts_for_90 / n;
        m.reuse += s.reuse / n;
        m.reuse_pairs += s.reuse_pairs;
        m.predicted += s.predicted;
        if (s.predicted) {
            m.prediction_recall += s.prediction_recall;
            ++with_prediction;
        }
        m.predicted2 += s.predicted2;
        if (s.predicted2) {
            m.prediction2_recall += s.prediction2_recall;
            ++with_prediction2;
        }
        for (std::size_t c = 0; c < routing_cache_fractions.size(); ++c) {
            m.lru_slots[c] = s.lru_slots[c];
            m.lru_hit_rate[c] += s.lru_hit_rate[c] / n;
        }
    }
    m.prediction_recall = with_prediction ? m.prediction_recall / static_cast<double>(with_prediction) : 0.0;
    m.prediction2_recall = with_prediction2 ? m.prediction2_recall / static_cast<double>(with_prediction2) : 0.0;
    return m;
}

} // namespace sluice::experts
