// Registration and checking of the speculative-decoding flags.
#include "cli/speculative_flags.hpp"

#include "sluice/model_options.hpp"

#include <filesystem>

namespace sluice::cli {

void add_speculative_flags(CLI::App& cmd, speculative_flags& flags) {
    cmd.add_option("--draft", flags.draft,
                   "Speculative decoding with this draft model (GGUF, same vocabulary), held resident inside "
                   "--memory-budget; output is the same as without it");
    cmd.add_option("--draft-max", flags.draft_max,
                   "Most tokens drafted per step (the step length adapts below it; drafting stops while it does "
                   "not pay)")
        ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{64}))
        ->capture_default_str();
    cmd.add_flag("--draft-optional", flags.draft_optional,
                 "When the budget cannot hold the draft and the model, load the model alone with a warning "
                 "(default: fail)");
    cmd.add_flag("--draft-fixed", flags.fixed,
                 "Draft --draft-max tokens every step instead of adapting the length to measured acceptance and "
                 "costs (measurements)");
    cmd.add_flag("--lookup", flags.lookup,
                 "Speculative decoding by prompt lookup: drafts the tokens that followed the last n-gram's latest "
                 "earlier occurrence (no draft model; default mode when --draft is not given)");
    cmd.add_flag("--mtp", flags.mtp,
                 "Speculative decoding with the model's own multi-token prediction (MTP / NextN) block, which "
                 "GLM-4.5+ files carry: its experts are held resident inside --memory-budget (default mode when "
                 "--draft is not given)");
    cmd.add_flag("--no-draft-prefetch", flags.no_draft_prefetch,
                 "With streamed experts, do not read the experts predicted for drafted tokens before verifying them "
                 "(each drafted token's prediction is what its latest earlier occurrence chose)");
}

void speculative_flags::apply_to(model_options& options) const {
    options.draft_model = draft;
    options.draft_max = draft_max;
    options.draft_optional = draft_optional;
    options.draft_adaptive = !fixed;
    options.mtp = mtp;
    options.draft_prefetch = !no_draft_prefetch;
    options.speculative = !draft.empty() ? speculative_mode::draft
                          : mtp          ? speculative_mode::mtp
                          : lookup       ? speculative_mode::lookup
                                         : speculative_mode::off;
}

result<void> check_speculative_flags(const speculative_flags& flags) {
    if (flags.draft.empty()) {
        if (flags.draft_optional) {
            return make_error(std::errc::invalid_argument, "--draft-optional needs --draft");
        }
        return {};
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(flags.draft, ec)) {
        return make_error(std::errc::no_such_file_or_directory, "--draft " + flags.draft + ": no such file");
    }
    return {};
}

} // namespace sluice::cli
