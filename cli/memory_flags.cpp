// Registration and checking of the shared memory flags.
#include "cli/memory_flags.hpp"

#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/experts/read_scheduler.hpp"
#include "runtime/experts/replacement_policy.hpp"

#include <cmath>

namespace sluice::cli {

void add_memory_flags(CLI::App& cmd, memory_flags& flags, bool with_prefetch) {
    cmd.add_option("--memory-budget", flags.budget,
                   "Memory the model may use: weights, KV caches, buffers (e.g. 16GiB, 12G, 8000MB; default: 80% "
                   "of MemAvailable). Routed experts stream from disk when the whole model does not fit");
    cmd.add_option("--disk-bandwidth", flags.disk_gbps,
                   "Disk read bandwidth in GB/s for the plan's speed bound (skips the start-up probe)");
    if (with_prefetch) {
        cmd.add_flag("--no-prefetch", flags.no_prefetch,
                     "When streaming experts, read only the experts chosen, not the next layer's ahead");
        cmd.add_option("--prefetch-depth", flags.prefetch_depth,
                       "When streaming experts, how many layers ahead to predict and read: 1 (the next layer) or 2 "
                       "(also the one after, in a second batch behind the next layer's reads)")
            ->capture_default_str();
        cmd.add_option("--cache-policy", flags.cache_policy,
                       "When streaming experts, which one the cache evicts: " +
                           std::string(experts::cache_policy_names) + " (docs/STREAMING.md, \"Replacement\")")
            ->capture_default_str();
        cmd.add_option("--read-order", flags.read_order,
                       "When streaming experts, the order reads reach the disk: fifo (each read as soon as asked for) "
                       "or priority (demand reads first; predictions held while --read-window reads are in flight, "
                       "dropped unread once their layer has passed; docs/STREAMING.md, \"Read order\")")
            ->capture_default_str();
        cmd.add_option("--read-window", flags.read_window,
                       "With --read-order priority: reads in flight below which predictions are submitted (demand "
                       "reads never wait for it); 0: the default, " +
                           std::to_string(experts::default_read_window))
            ->capture_default_str();
    }
}

void add_record_routing_option(CLI::App& cmd, std::string& path) {
    cmd.add_option("--record-routing", path,
                   "MoE models: write every token's routing (chosen experts, weights, next-layer prediction) to "
                   "FILE (docs/ROUTING.md)");
}

void add_replay_routing_option(CLI::App& cmd, std::string& path) {
    cmd.add_option("--routing", path,
                   "MoE models: replay the routing recorded in FILE (sluice run --record-routing) instead of the "
                   "model's router; the recording must have the model's layers x experts x top-k");
}

void memory_settings::apply_to(model_options& options) const noexcept {
    options.memory_budget = budget;
    options.disk_bandwidth = disk_bandwidth;
    options.prefetch = prefetch;
    options.prefetch_depth = prefetch_depth;
    options.cache_policy = cache_policy;
    options.cache_pin_percent = cache_pin_percent;
    options.read_order = read_order;
    options.read_window = read_window;
}

result<memory_settings> check_memory_flags(const memory_flags& flags) {
    memory_settings s;
    if (!flags.budget.empty()) {
        auto bytes = parse_size(flags.budget);
        if (!bytes) {
            return bytes.error().with_context("--memory-budget");
        }
        if (*bytes == 0) {
            return make_error(std::errc::invalid_argument, "--memory-budget must be more than 0 bytes");
        }
        s.budget = *bytes;
    }
    if (!std::isfinite(flags.disk_gbps) || flags.disk_gbps < 0) {
        return make_error(std::errc::invalid_argument, "--disk-bandwidth must be a positive number of GB/s");
    }
    s.disk_bandwidth = flags.disk_gbps * 1e9;
    s.prefetch = !flags.no_prefetch;
    if (flags.prefetch_depth < 1 || flags.prefetch_depth > 2) {
        return make_error(std::errc::invalid_argument,
                          "--prefetch-depth must be 1 or 2, not " + std::to_string(flags.prefetch_depth));
    }
    s.prefetch_depth = flags.prefetch_depth;
    auto policy = experts::parse_policy_spec(flags.cache_policy);
    if (!policy) {
        return policy.error().with_context("--cache-policy");
    }
    s.cache_policy = policy->policy;
    s.cache_pin_percent = policy->pin_percent;
    auto order = experts::parse_read_order(flags.read_order);
    if (!order) {
        return order.error().with_context("--read-order");
    }
    s.read_order = *order;
    if (flags.read_window > 1024) {
        return make_error(std::errc::invalid_argument, "--read-window must be 0 (the default) to 1024 reads, not " +
                                                           std::to_string(flags.read_window));
    }
    s.read_window = flags.read_window;
    return s;
}

} // namespace sluice::cli
