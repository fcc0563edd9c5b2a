// The flags every model subcommand spells the same way (-m/--model, -t/--threads, -c/--ctx, -n), with ranges
// checked by the parser so a bad number gets a message naming the range ("--port: Value 99999 not in range
// 0 to 65535"), and the context-length warning.
#pragma once

#include "runtime/chat/limits.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::cli {

/// Largest values the numeric flags accept.
inline constexpr std::size_t max_threads = 1024;
inline constexpr std::uint32_t max_ctx = 1u << 24;

/// -m,--model PATH.
CLI::Option* add_model_option(CLI::App& cmd, std::string& path, const std::string& help);
/// -t,--threads N (0: one per hardware thread), in [0, max_threads].
CLI::Option* add_threads_option(CLI::App& cmd, std::size_t& threads, const std::string& help = {});
/// -c,--ctx N, in [0, max_ctx]; `help` says what 0 means.
CLI::Option* add_ctx_option(CLI::App& cmd, std::uint32_t& ctx, const std::string& help);

/// The chat-template flags `run` and `serve` share: --special-tokens-in-content and the sandbox's limits
/// (--template-max-steps, --template-max-bytes, --template-max-time-ms, --template-max-depth).
void add_template_flags(CLI::App& cmd, chat::template_limits& limits, bool& special_tokens_in_content);

/// A warning on stderr ("sluice run: warning: --ctx 100000 is larger than the model's training context (512);
/// output past 512 tokens is unlikely to make sense") when `ctx` exceeds `trained` (0: unknown).
void warn_if_ctx_exceeds_training(const char* command, std::uint32_t ctx, std::uint32_t trained);

/// The subcommand of `app` nearest to `typed` (edit distance), or "" when none is close.
std::string nearest_subcommand(const CLI::App& app, const std::string& typed);

} // namespace sluice::cli
