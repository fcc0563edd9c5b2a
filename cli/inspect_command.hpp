// `sluice inspect`: prints a GGUF model's metadata, tokenizer summary, tensor table and dense/expert totals, or
// (with --plan) the memory plan for a budget, optionally under a routing recording; --header-only works on the
// first megabytes of a file (a partial download).
#pragma once

#include "cli/memory_flags.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>

#include <string>

namespace sluice::cli {

struct inspect_options {
    std::string path;
    bool json = false;
    bool plan = false;                ///< print the memory plan (JSON) instead of the report
    memory_flags memory;              ///< --memory-budget, --disk-bandwidth
    std::uint32_t ctx = 0;            ///< context per sequence; 0: the model's default (as `run` picks it)
    std::uint32_t parallel = 1;       ///< sequences with a KV cache each
    std::size_t threads = 0;          ///< compute threads; 0: one per hardware thread
    bool probe = false;               ///< measure the disk's random-read bandwidth for the speed bound
    bool header_only = false;         ///< read the GGUF header alone (a partial download): never the tensor data
    std::string routing;              ///< --plan: a routing recording replayed through the planned cache
    std::string draft;                ///< --plan: a draft model planned first inside the budget (speculative decoding)
    bool mtp = false;                 ///< --plan: the MTP block planned first inside the budget (run/serve --mtp)
    std::string policy = "lru-2";     ///< --routing: the cache's replacement policy (experts::parse_policy_spec)
    std::uint32_t prefetch_width = 0; ///< --routing: the first this many of each recorded prediction read ahead
    std::uint32_t prefetch_depth = 1; ///< --routing: 2 also reads the recorded predictions two layers ahead
    std::uint32_t streams = 1;        ///< --routing: sequences replayed at once, one batch step per token of each
    std::int64_t prediction_limit = -1; ///< --routing with --streams: most experts read ahead per step (-1: 8 x top-k)
    double compute_tokens_per_s = 0;    ///< --plan: decode tokens/s with the experts in memory; 0: unknown
};

/// Runs the inspection and returns the process exit status (0, or 1 with a message on stderr).
int run_inspect(const inspect_options& opts);

/// Registers the `inspect` subcommand on `app`.
void add_inspect_command(CLI::App& app);

} // namespace sluice::cli
