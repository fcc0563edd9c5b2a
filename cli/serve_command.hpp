// `sluice serve`: the OpenAI-compatible HTTP server (see docs/SERVER.md).
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

/// Registers the `serve` subcommand on `app`.
void add_serve_command(CLI::App& app);

} // namespace sluice::cli
