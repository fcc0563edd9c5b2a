// The memory flags `run`, `bench`, `serve` and `inspect --plan` share: --memory-budget, --disk-bandwidth,
// --no-prefetch, --prefetch-depth, --cache-policy, --read-order and --read-window, registered on a subcommand and
// checked into bytes, bytes/s and a policy.
#pragma once

#include "sluice/error.hpp"
#include "sluice/model_options.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace sluice::cli {

/// The flags as typed.
struct memory_flags {
    std::string budget;                  ///< --memory-budget SIZE; empty: the default budget
    double disk_gbps = 0;                ///< --disk-bandwidth GB/s; 0: not given
    bool no_prefetch = false;            ///< --no-prefetch
    std::uint32_t prefetch_depth = 1;    ///< --prefetch-depth 1|2
    std::string cache_policy = "lru-2";  ///< --cache-policy NAME[:PERCENT]
    std::string read_order = "priority"; ///< --read-order fifo|priority
    std::uint32_t read_window = 0;       ///< --read-window N; 0: the default
};

/// The flags checked: budget in bytes (0: default), bandwidth in bytes/s (0: not given).
struct memory_settings {
    std::uint64_t budget = 0;
    double disk_bandwidth = 0;
    bool prefetch = true;
    std::uint32_t prefetch_depth = 1;
    sluice::expert_cache_policy cache_policy = sluice::expert_cache_policy::lru2;
    std::uint32_t cache_pin_percent = 50;
    sluice::expert_read_order read_order = sluice::expert_read_order::priority;
    std::uint32_t read_window = 0;

    /// Sets the matching fields of the library's load options.
    void apply_to(model_options& options) const noexcept;
};

/// Registers --memory-budget and --disk-bandwidth on `cmd`, and --no-prefetch, --prefetch-depth, --cache-policy,
/// --read-order and --read-window when `with_prefetch`.
void add_memory_flags(CLI::App& cmd, memory_flags& flags, bool with_prefetch = true);

/// --record-routing FILE (run, serve): every token's routing written to FILE (docs/ROUTING.md).
void add_record_routing_option(CLI::App& cmd, std::string& path);
/// --routing FILE (bench): a recording's routing replayed instead of the model's router.
void add_replay_routing_option(CLI::App& cmd, std::string& path);

/// Checks the flags. Errors name the flag ("--memory-budget \"4 XB\": unknown unit \"XB\" ...").
result<memory_settings> check_memory_flags(const memory_flags& flags);

} // namespace sluice::cli
