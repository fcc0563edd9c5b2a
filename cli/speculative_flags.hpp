// The speculative-decoding flags `run` and `serve` share: --draft, --draft-max, --draft-optional, --lookup, --mtp.
#pragma once

#include "sluice/error.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace sluice {
struct model_options;
} // namespace sluice

namespace sluice::cli {

/// The flags as typed.
struct speculative_flags {
    std::string draft;           ///< --draft FILE: a draft model (same vocabulary)
    std::uint32_t draft_max = 8; ///< --draft-max K: most tokens drafted per step
    bool draft_optional = false; ///< --draft-optional: load without the draft when the budget cannot hold both
    bool lookup = false;         ///< --lookup: prompt-lookup drafting (no draft model)
    bool mtp = false;            ///< --mtp: drafting with the model's own multi-token prediction block
    bool no_draft_prefetch = false; ///< --no-draft-prefetch: streaming, no reads of drafted tokens' experts ahead
    bool fixed = false;          ///< --draft-fixed: every step drafts --draft-max tokens

    /// Sets the matching fields of the library's load options: the default mode is draft with --draft, else mtp
    /// with --mtp, else lookup with --lookup, else off.
    void apply_to(model_options& options) const;
};

/// Registers the flags on `cmd`.
void add_speculative_flags(CLI::App& cmd, speculative_flags& flags);

/// Checks the flags (the draft file exists and is a file). Errors name the flag.
result<void> check_speculative_flags(const speculative_flags& flags);

} // namespace sluice::cli
