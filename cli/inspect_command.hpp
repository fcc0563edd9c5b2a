// `sluice inspect`: prints a GGUF model's metadata, tokenizer summary, tensor table and dense/expert totals.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace sluice::cli {

struct inspect_options {
    std::string path;
    bool json = false;
};

/// Runs the inspection and returns the process exit status (0, or 1 with a message on stderr).
int run_inspect(const inspect_options& opts);

/// Registers the `inspect` subcommand on `app`.
void add_inspect_command(CLI::App& app);

} // namespace sluice::cli
