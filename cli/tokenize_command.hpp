// `sluice tokenize` and `sluice detokenize`: text to token ids and back with a GGUF or tokenizer.json model.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

/// Registers the `tokenize` and `detokenize` subcommands on `app`.
void add_tokenize_commands(CLI::App& app);

} // namespace sluice::cli
