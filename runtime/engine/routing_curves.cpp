// The learned-routing curves: rows printed by bench/streaming/routing_curve on bench/routing/*.routing
// (`routing_curve qwen3-30b-a3b.routing qwen3.5-35b-a3b.routing gpt-oss-120b.routing`, Nov 28 2026).
#include "runtime/engine/routing_curves.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace sluice {
namespace {

struct routing_curve {
    std::uint32_t experts;
    std::uint32_t top_k;
    std::string_view source;
    std::array<std::pair<double, double>, 14> points; ///< (cache share, reads / cold reads), rising shares
};

// clang-format off
constexpr std::array<routing_curve, 3> curves{{
    {128, 8, "routing donor qwen3-30b-a3b (48 layers x 128 experts, top-8; hidden 256; 1123 steps, seed 1)", {{{0.02, 1.0503}, {0.05, 0.9364}, {0.10, 0.8047}, {0.15, 0.6882}, {0.20, 0.5932}, {0.25, 0.5066}, {0.30, 0.4320}, {0.40, 0.2985}, {0.50, 0.1993}, {0.60, 0.1248}, {0.70, 0.0720}, {0.80, 0.0357}, {0.90, 0.0110}, {0.95, 0.0031}}}},
    {256, 8, "routing donor qwen3.5-35b-a3b (40 layers x 256 experts, top-8, shared expert; hidden 256; 1227 steps, seed 1)", {{{0.02, 1.0283}, {0.05, 0.9114}, {0.10, 0.7591}, {0.15, 0.6361}, {0.20, 0.5299}, {0.25, 0.4420}, {0.30, 0.3651}, {0.40, 0.2512}, {0.50, 0.1733}, {0.60, 0.1154}, {0.70, 0.0740}, {0.80, 0.0384}, {0.90, 0.0122}, {0.95, 0.0050}}}},
    {128, 4, "routing donor gpt-oss-120b (36 layers x 128 experts, top-4; hidden 256; 1400 steps, seed 1)", {{{0.02, 1.0401}, {0.05, 0.9081}, {0.10, 0.7415}, {0.15, 0.6086}, {0.20, 0.4978}, {0.25, 0.4066}, {0.30, 0.3308}, {0.40, 0.2229}, {0.50, 0.1506}, {0.60, 0.1005}, {0.70, 0.0613}, {0.80, 0.0300}, {0.90, 0.0087}, {0.95, 0.0025}}}},
}};
// clang-format on

const routing_curve& nearest(std::uint32_t experts, std::uint32_t top_k) {
    const double want = static_cast<double>(std::max(1u, top_k)) / std::max(1u, experts);
    const routing_curve* best = &curves.front();
    double best_distance = INFINITY;
    for (const auto& c : curves) {
        if (c.experts == experts && c.top_k == top_k) {
            return c;
        }
        const double d = std::abs(std::log(static_cast<double>(c.top_k) / c.experts / want));
        if (d < best_distance) {
            best_distance = d;
            best = &c;
        }
    }
    return *best;
}

} // namespace

double learned_read_share(std::uint32_t experts, std::uint32_t top_k, double cache_share, std::string_view* source) {
    const auto& c = nearest(experts, top_k);
    if (source != nullptr) {
        *source = c.source;
    }
    if (cache_share >= 1.0) {
        return 0.0;
    }
    // Linear between the measured points, from every chosen expert read at a cache of none to nothing read at a
    // cache of every expert.
    std::pair<double, double> prev{0.0, 1.0};
    for (const auto& p : c.points) {
        if (cache_share <= p.first) {
            return prev.second + (p.second - prev.second) * (cache_share - prev.first) / (p.first - prev.first);
        }
        prev = p;
    }
    return prev.second * (1.0 - cache_share) / (1.0 - prev.first);
}

} // namespace sluice
