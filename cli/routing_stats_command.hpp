// `sluice routing-stats FILE [--json]`: per-layer statistics of a routing recording (sluice run --record-routing).
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

/// Registers the `routing-stats` subcommand on `app`.
void add_routing_stats_command(CLI::App& app);

} // namespace sluice::cli
