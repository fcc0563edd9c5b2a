// The learned-routing curve the planner assumes by default: for routing recordings (bench/routing/*.routing),
// the share of a token's cold reads that a cache of a given share of all experts still reads (misses plus the
// next-layer predictions read ahead; LRU-2, the default policy), and its demand hit rate, at fixed cache shares.
// Prints a markdown table and the rows of runtime/engine/routing_curves.cpp. Usage: routing_curve REC [REC...]
#include "runtime/engine/routing_plan.hpp"
#include "runtime/experts/routing_trace.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    using namespace sluice;
    if (argc < 2) {
        std::fprintf(stderr, "usage: routing_curve RECORDING.routing [RECORDING.routing...]\n");
        return 2;
    }
    constexpr std::array<double, 14> shares{0.02, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30,
                                            0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 0.95};
    std::vector<std::string> rows;
    std::printf("| recording | geometry | tokens |");
    for (const auto s : shares) {
        std::printf(" %g%% |", 100 * s);
    }
    std::printf("\n|---|---|---:|");
    for (std::size_t i = 0; i < shares.size(); ++i) {
        std::printf("---:|");
    }
    std::printf("\n");
    for (int i = 1; i < argc; ++i) {
        auto trace = experts::routing_trace::load(argv[i]);
        if (!trace) {
            std::fprintf(stderr, "routing_curve: %s\n", trace.error().message.c_str());
            return 1;
        }
        const auto& g = trace->geometry();
        experts::expert_layout layout;
        layout.read_bytes = 1; // bytes count reads: read_bytes_per_token is not used, the counts are
        layout.expert_used = g.top_k;
        std::printf("| %s | %s | %llu |", trace->header().model_name.c_str(), experts::to_string(g).c_str(),
                    static_cast<unsigned long long>(trace->size()));
        std::string row = "    {" + std::to_string(g.experts) + ", " + std::to_string(g.top_k) + ", \"" +
                          trace->header().model_name + "\", {";
        for (const auto s : shares) {
            memory_plan plan;
            plan.strategy = memory_plan::strategy_kind::stream_experts;
            plan.total_experts = std::uint64_t{g.layers} * g.experts;
            plan.cache_slots = static_cast<std::uint64_t>(std::llround(s * static_cast<double>(plan.total_experts)));
            auto e = estimate_routing(plan, layout, *trace, g, {experts::cache_policy::lru2}, {true}, argv[i]);
            if (!e) {
                std::fprintf(stderr, "routing_curve: %s\n", e.error().message.c_str());
                return 1;
            }
            const double cold = static_cast<double>(e->measured_tokens) * g.layers * g.top_k;
            const double read = static_cast<double>(e->misses + e->prefetch_reads) / cold;
            std::printf(" %.3f (%.1f%%) |", read, 100 * e->hit_rate);
            char cell[48];
            std::snprintf(cell, sizeof cell, "%s{%.2f, %.4f}", s == shares.front() ? "" : ", ", s, read);
            row += cell;
        }
        std::printf("\n");
        rows.push_back(row + "}},");
    }
    std::printf("\nrows of runtime/engine/routing_curves.cpp (cache share, reads / cold reads):\n");
    for (const auto& r : rows) {
        std::printf("%s\n", r.c_str());
    }
    return 0;
}
