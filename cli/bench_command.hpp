// `sluice bench`: prefill and decode throughput of a model, over repetitions, as a table or JSON.
#pragma once

#include "cli/memory_flags.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::cli {

struct bench_options {
    std::string model;
    std::vector<std::uint32_t> prompt_lengths{64, 512}; ///< one prefill test per length
    std::uint32_t generate_tokens = 128;                ///< tokens of the decode test (0: no decode test)
    std::uint32_t repetitions = 3;
    std::size_t threads = 0; ///< 0: one per hardware thread
    bool json = false;
    memory_flags memory; ///< --memory-budget, --disk-bandwidth, --no-prefetch
    std::string routing; ///< --routing FILE: a recording replayed instead of the router's choice
};

/// Runs the benchmark and returns the process exit status (0, or 1 with a message on stderr).
int run_bench(const bench_options& opts);

/// Registers the `bench` subcommand on `app`.
void add_bench_command(CLI::App& app);

} // namespace sluice::cli
