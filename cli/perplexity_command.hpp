// `sluice perplexity -m FILE -f TEXT [--ctx N] [--json]`: the perplexity of a model on a text file, computed
// the way llama.cpp's `llama-perplexity` computes it (see perplexity_command.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::cli {

struct perplexity_options {
    std::string model;       ///< GGUF file
    std::string file;        ///< UTF-8 text to score
    std::uint32_t ctx = 512; ///< tokens per window
    std::size_t threads = 0; ///< compute threads; 0: one per hardware thread
    bool json = false;       ///< one JSON object on stdout instead of text
    bool kv_f32 = false;     ///< F32 KV cache instead of F16
};

/// Runs the command; returns the exit status (0, or 1 with a message on stderr).
int run_perplexity(const perplexity_options& opts);

/// Registers the `perplexity` subcommand.
void add_perplexity_command(CLI::App& app);

} // namespace sluice::cli
