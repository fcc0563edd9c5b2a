// Speculative decoding settings (public): where drafted tokens come from and how many a step may verify.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice {

/// Where a generation's drafted tokens come from.
enum class speculative_mode {
    off,    ///< one token per forward pass
    lookup, ///< prompt lookup: the tokens that followed the latest earlier occurrence of the last n-gram
    draft,  ///< the draft model the target was loaded with (model_options::draft_model)
    mtp,    ///< the model's own multi-token prediction block (model_options::mtp; GLM-4.5+ files carry one)
};

/// "off", "lookup", "draft", "mtp".
std::string_view to_string(speculative_mode m) noexcept;
/// Parses "off", "lookup", "draft", "mtp"; nullopt otherwise.
std::optional<speculative_mode> parse_speculative_mode(std::string_view text) noexcept;

/// Per-generation speculation. Output is the same as without it: greedy decoding gives identical tokens, and
/// sampling (temperature > 0) keeps the target's distribution through the rejection rule. A request with a
/// grammar, or a model with recurrent layers (whose state cannot be cut back after a rejection), decodes one
/// token per step whatever is asked.
struct speculative_params {
    std::optional<speculative_mode> mode; ///< nullopt: the model's default (model_options::speculative)
    std::uint32_t max_draft = 0;          ///< most tokens drafted per step; 0: the model's default (draft_max)
    /// true: each step's length follows the measured acceptance and costs (0 while drafting does not pay);
    /// false: every step drafts max_draft tokens (tests, measurements); nullopt: the model's default
    /// (model_options::draft_adaptive).
    std::optional<bool> adaptive;
};

} // namespace sluice
