// `sluice mkmodel`: writes a random-weight GGUF model of a preset geometry (or lists the presets).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::cli {

struct mkmodel_options {
    std::string output;
    std::string preset;
    std::optional<std::string> type;
    std::optional<std::uint32_t> layers;
    std::optional<std::uint32_t> experts;
    std::optional<std::uint32_t> experts_used;
    std::optional<std::uint32_t> embd;
    std::optional<std::uint32_t> vocab;
    std::optional<std::uint32_t> ctx;
    std::uint64_t seed = 0;
    bool tied = false;
    std::optional<std::string> tokenizer_from;
    std::uint64_t split_bytes = 0;
    bool list_presets = false;
    bool quiet = false;
};

/// Runs the command and returns the process exit status (0, or 1 with a message on stderr and no output file).
int run_mkmodel(const mkmodel_options& opts);

/// Registers the `mkmodel` subcommand on `app`.
void add_mkmodel_command(CLI::App& app);

} // namespace sluice::cli
