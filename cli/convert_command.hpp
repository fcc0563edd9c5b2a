// `sluice convert HF_DIR -o OUT.gguf [--type T] [--name NAME]`: a Hugging Face safetensors checkpoint to GGUF.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

/// Registers the `convert` subcommand on `app`.
void add_convert_command(CLI::App& app);

} // namespace sluice::cli
