// Shared flag registration with range checks, the training-context warning and subcommand suggestions.
#include "cli/common_flags.hpp"

#include <algorithm>
#include <iostream>
#include <vector>

namespace sluice::cli {

CLI::Option* add_model_option(CLI::App& cmd, std::string& path, const std::string& help) {
    return cmd.add_option("-m,--model", path, help);
}

CLI::Option* add_threads_option(CLI::App& cmd, std::size_t& threads, const std::string& help) {
    return cmd
        .add_option("-t,--threads", threads, help.empty() ? "Compute threads (0: one per hardware thread)" : help)
        ->check(CLI::Range(std::size_t{0}, max_threads))
        ->capture_default_str();
}

CLI::Option* add_ctx_option(CLI::App& cmd, std::uint32_t& ctx, const std::string& help) {
    return cmd.add_option("-c,--ctx", ctx, help)->check(CLI::Range(std::uint32_t{0}, max_ctx))->capture_default_str();
}

void add_template_flags(CLI::App& cmd, chat::template_limits& limits, bool& special_tokens_in_content) {
    cmd.add_flag("--special-tokens-in-content", special_tokens_in_content,
                 "Old behaviour: control-token text a user writes in a message (\"<|im_end|>\") becomes a control "
                 "token (default: it is encoded as text)");
    cmd.add_option("--template-max-steps", limits.max_steps, "Chat template sandbox: evaluation steps per render")
        ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--template-max-bytes", limits.max_bytes, "Chat template sandbox: bytes of values per render")
        ->check(CLI::Range(std::uint64_t{1} << 20, std::uint64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option_function<std::uint64_t>(
           "--template-max-time-ms", [&limits](std::uint64_t ms) { limits.max_time = std::chrono::milliseconds(ms); },
           "Chat template sandbox: milliseconds per render (default 10000)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{3'600'000}));
    cmd.add_option("--template-max-depth", limits.max_depth, "Chat template sandbox: nesting of evaluation")
        ->check(CLI::Range(10u, 4000u))
        ->capture_default_str();
}

void warn_if_ctx_exceeds_training(const char* command, std::uint32_t ctx, std::uint32_t trained) {
    if (trained == 0 || ctx <= trained)
        return;
    std::cerr << "sluice " << command << ": warning: --ctx " << ctx << " is larger than the model's training context ("
              << trained << "); output past " << trained << " tokens is unlikely to make sense\n";
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}

} // namespace

std::string nearest_subcommand(const CLI::App& app, const std::string& typed) {
    std::string best;
    std::size_t best_distance = 0;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        const std::string& name = sub->get_name();
        const std::size_t d = edit_distance(typed, name);
        if (best.empty() || d < best_distance) {
            best = name;
            best_distance = d;
        }
    }
    // Close enough to be a typo: two edits (a swapped pair of letters), or a third of a longer name.
    return best_distance <= std::max<std::size_t>(2, best.size() / 3) || best.starts_with(typed) ? best : "";
}

} // namespace sluice::cli
