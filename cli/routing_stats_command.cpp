// `sluice routing-stats`: reads a routing recording and prints, per routed layer, the top expert's share of the
// picks, the fraction of experts holding 90% of them, reuse from the previous token, the recall of the predictions
// one and two layers ahead (the second from version-2 recordings) and a per-layer LRU cache's hit rate at 3/6/12.5/25%
// of the experts; the mean over layers last.
#include "cli/routing_stats_command.hpp"

#include "cli/json_text.hpp"
#include "runtime/experts/routing_stats.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>

namespace sluice::cli {
namespace {

namespace json = boost::json;

struct routing_stats_options {
    std::string path;
    bool json = false;
};

json::object stats_json(const experts::layer_routing_stats& s) {
    json::array lru;
    for (std::size_t c = 0; c < experts::routing_cache_fractions.size(); ++c) {
        lru.push_back(json::object{{"fraction", experts::routing_cache_fractions[c]},
                                   {"slots", s.lru_slots[c]},
                                   {"hit_rate", s.lru_hit_rate[c]}});
    }
    return json::object{{"layer", s.layer},
                        {"picks", s.picks},
                        {"top_share", s.top_share},
                        {"experts_for_90", s.experts_for_90},
                        {"reuse", s.reuse},
                        {"reuse_pairs", s.reuse_pairs},
                        {"prediction_recall", s.prediction_recall},
                        {"predicted_tokens", s.predicted},
                        {"prediction2_recall", s.prediction2_recall},
                        {"predicted2_tokens", s.predicted2},
                        {"lru", std::move(lru)}};
}

void print_row(const char* label, const experts::layer_routing_stats& s, bool depth2) {
    std::printf("%-6s %7.1f%% %8.1f%% %7.1f%% ", label, 100 * s.top_share, 100 * s.experts_for_90, 100 * s.reuse);
    if (s.predicted > 0) {
        std::printf("%8.1f%%", 100 * s.prediction_recall);
    } else {
        std::printf("%9s", "-");
    }
    if (depth2 && s.predicted2 > 0) {
        std::printf(" %7.1f%%", 100 * s.prediction2_recall);
    } else if (depth2) {
        std::printf(" %8s", "-");
    }
    for (const auto h : s.lru_hit_rate) {
        std::printf(" %7.1f%%", 100 * h);
    }
    std::printf("\n");
}

void print_table(const experts::routing_trace& t, const std::vector<experts::layer_routing_stats>& layers) {
    const auto& g = t.geometry();
    std::set<std::uint32_t> sequences;
    for (std::uint64_t i = 0; i < t.size(); ++i) {
        sequences.insert(t.sequence(i));
    }
    std::printf("recording  model \"%s\", %s, %llu tokens in %zu sequence(s)\n", t.header().model_name.c_str(),
                experts::to_string(g).c_str(), static_cast<unsigned long long>(t.size()), sequences.size());
    const auto& first = layers.front();
    std::printf("uniform    top share %.1f%%, 90%% of picks on 90.0%% of experts, reuse %.1f%%\n", 100.0 / g.experts,
                100.0 * g.top_k / g.experts);
    const bool depth2 = t.has_depth2();
    std::printf("\n%-6s %8s %9s %8s %9s", "layer", "top", "90%", "reuse", "pred");
    if (depth2) {
        std::printf(" %8s", "pred2");
    }
    for (std::size_t c = 0; c < experts::routing_cache_fractions.size(); ++c) {
        char head[32];
        std::snprintf(head, sizeof head, "LRU %u", first.lru_slots[c]);
        std::printf(" %8s", head);
    }
    std::printf("\n");
    for (const auto& s : layers) {
        print_row(std::to_string(s.layer).c_str(), s, depth2);
    }
    const auto mean = experts::mean_statistics(layers);
    print_row("mean", mean, depth2);
    std::printf(
        "\ntop: the most chosen expert's share of a layer's picks; 90%%: the fewest experts holding 90%% of "
        "them, as a share of the layer's experts; reuse: share of a token's experts its sequence's previous "
        "token chose; pred: share of a token's experts the previous layer's prediction named; pred2: the same for "
        "the prediction made two layers before (version-2 recordings); LRU n: hit "
        "rate of a per-layer LRU cache of n slots (%g/%g/%g/%g%% of the experts)\n",
        100 * experts::routing_cache_fractions[0], 100 * experts::routing_cache_fractions[1],
        100 * experts::routing_cache_fractions[2], 100 * experts::routing_cache_fractions[3]);
}

int run_routing_stats(const routing_stats_options& opts) {
    auto trace = experts::routing_trace::load(opts.path);
    if (!trace) {
        std::cerr << "sluice routing-stats: " << trace.error().message << "\n";
        return 1;
    }
    const auto layers = experts::routing_statistics(*trace);
    if (layers.empty()) {
        std::cerr << "sluice routing-stats: " << opts.path << ": the recording holds no routed tokens\n";
        return 1;
    }
    if (opts.json) {
        json::array rows;
        for (const auto& s : layers) {
            rows.push_back(stats_json(s));
        }
        const auto& g = trace->geometry();
        std::cout << json_text(json::object{{"model", trace->header().model_name},
                                            {"layers", g.layers},
                                            {"experts", g.experts},
                                            {"top_k", g.top_k},
                                            {"tokens", trace->size()},
                                            {"version", trace->header().version},
                                            {"per_layer", std::move(rows)},
                                            {"mean", stats_json(experts::mean_statistics(layers))}})
                  << "\n";
    } else {
        print_table(*trace, layers);
    }
    return 0;
}

} // namespace

void add_routing_stats_command(CLI::App& app) {
    auto o = std::make_shared<routing_stats_options>();
    auto* cmd = app.add_subcommand("routing-stats", "Per-layer statistics of a routing recording (--record-routing)");
    cmd->add_option("FILE", o->path, "Routing recording")->required();
    cmd->add_flag("--json", o->json, "Print the statistics as JSON");
    cmd->callback([o] {
        if (const int rc = run_routing_stats(*o); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
