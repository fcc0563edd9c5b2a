// `sluice template`: renders a model's chat template over messages given as JSON.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

/// Registers the `template` subcommand on `app`.
void add_template_command(CLI::App& app);

} // namespace sluice::cli
