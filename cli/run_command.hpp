// `sluice run`: loads a model and generates from one prompt, streaming the text to stdout.
#pragma once

#include "cli/memory_flags.hpp"
#include "cli/speculative_flags.hpp"
#include "runtime/chat/limits.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {

struct run_options {
    std::string model;
    std::string prompt;
    bool chat = false;              ///< render the prompt as one user message through the chat template
    std::uint32_t max_tokens = 256; ///< 0: until end of generation or a full context
    float temperature = 0.8f;
    std::int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float repeat_penalty = 1.0f;
    std::optional<std::uint64_t> seed; ///< unset: a random seed (printed with the statistics)
    std::uint32_t ctx = 0;             ///< 0: the model's default
    std::size_t threads = 0;           ///< 0: one per hardware thread
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool json = false;
    memory_flags memory;                    ///< --memory-budget, --disk-bandwidth, --no-prefetch
    speculative_flags speculative;          ///< --draft, --draft-max, --draft-optional, --lookup
    std::string record_routing;             ///< --record-routing FILE
    std::string replay_routing;             ///< --routing FILE
    chat::template_limits template_limits;  ///< --template-max-*
    bool special_tokens_in_content = false; ///< --special-tokens-in-content
};

/// Runs the generation and returns the process exit status (0, or 1 with a message on stderr).
int run_run(const run_options& opts);

/// Registers the `run` subcommand on `app`.
void add_run_command(CLI::App& app);

} // namespace sluice::cli
