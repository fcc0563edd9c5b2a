// `sluice serve [-m FILE] [...]`: parses the server's options (sizes like "1MiB", durations like "30s") and runs
// sluice::server::run_server until SIGINT or SIGTERM. Without -m it serves the bundled model.
#include "cli/serve_command.hpp"

#include "cli/common_flags.hpp"
#include "cli/default_model.hpp"
#include "cli/memory_flags.hpp"
#include "cli/speculative_flags.hpp"

#include "server/server.hpp"
#include "server/server_options.hpp"

#include <iostream>
#include <memory>
#include <string>

namespace sluice::cli {
namespace {

struct serve_args {
    server::server_options options;
    std::string max_body = "1MiB";
    std::string timeout = "30s";
    std::string shutdown_grace = "5s";
    memory_flags memory;
    speculative_flags speculative;
};

int run_serve(serve_args& args) {
    const auto chosen = model_or_bundled(args.options.model, "serve");
    if (!chosen) {
        return 1;
    }
    args.options.model = *chosen;
    auto body = server::parse_size(args.max_body);
    if (!body) {
        std::cerr << "sluice serve: --max-body: " << body.error().message << "\n";
        return 1;
    }
    auto timeout = server::parse_duration(args.timeout);
    if (!timeout) {
        std::cerr << "sluice serve: --timeout: " << timeout.error().message << "\n";
        return 1;
    }
    if (timeout->count() == 0 || args.options.parallel == 0) {
        std::cerr << "sluice serve: --timeout and --parallel must be positive\n";
        return 1;
    }
    auto grace = server::parse_duration(args.shutdown_grace);
    if (!grace) {
        std::cerr << "sluice serve: --shutdown-grace: " << grace.error().message << "\n";
        return 1;
    }
    args.options.shutdown_grace = *grace;
    auto memory = check_memory_flags(args.memory);
    if (!memory) {
        std::cerr << "sluice serve: " << memory.error().message << "\n";
        return 1;
    }
    args.options.memory_budget = memory->budget;
    args.options.disk_bandwidth = memory->disk_bandwidth;
    args.options.prefetch = memory->prefetch;
    args.options.prefetch_depth = memory->prefetch_depth;
    args.options.cache_policy = memory->cache_policy;
    args.options.cache_pin_percent = memory->cache_pin_percent;
    args.options.read_order = memory->read_order;
    args.options.read_window = memory->read_window;
    if (auto ok = check_speculative_flags(args.speculative); !ok) {
        std::cerr << "sluice serve: " << ok.error().message << "\n";
        return 1;
    }
    args.options.draft = args.speculative.draft;
    args.options.draft_max = args.speculative.draft_max;
    args.options.draft_optional = args.speculative.draft_optional;
    args.options.lookup = args.speculative.lookup;
    args.options.mtp = args.speculative.mtp;
    args.options.draft_prefetch = !args.speculative.no_draft_prefetch;
    args.options.draft_fixed = args.speculative.fixed;
    args.options.max_body = *body;
    args.options.timeout = *timeout;
    return server::run_server(args.options);
}

} // namespace

void add_serve_command(CLI::App& app) {
    auto a = std::make_shared<serve_args>();
    auto& o = a->options;
    auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
    add_model_option(*cmd, o.model,
                     "GGUF model file (any part of a split model); default: the bundled sluice-tiny-moe");
    cmd->add_option("--host", o.host, "Address to bind")->capture_default_str();
    cmd->add_option("--port", o.port, "TCP port (0: any free port, printed on stderr)")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    cmd->add_option("--parallel", o.parallel,
                    "Generations running at once (one session each, batched into one forward pass per step)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{256}))
        ->capture_default_str();
    cmd->add_option("--queue", o.queue, "Requests waiting for a slot before 503")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20))
        ->capture_default_str();
    add_ctx_option(*cmd, o.ctx, "Context size of each session (0: the model's default)");
    add_threads_option(*cmd, o.threads);
    cmd->add_option("--api-key", o.api_key, "Require 'Authorization: Bearer KEY' (all but /health)");
    cmd->add_option("--max-body", a->max_body, "Largest request body (B, KB, MB, KiB, MiB, ...)")
        ->capture_default_str();
    cmd->add_option("--timeout", a->timeout, "Limit of every read and write (ms, s, m, h)")->capture_default_str();
    cmd->add_option("--shutdown-grace", a->shutdown_grace,
                    "After SIGTERM, how long running generations may finish before they are stopped (0s: at once)")
        ->capture_default_str();
    // Many streams share one batch step: lru-2-cycle keeps most of the cache from one step to the next when a
    // step's experts outnumber the slots (docs/STREAMING.md, "Replacement"); one stream reads the same as lru-2.
    a->memory.cache_policy = "lru-2-cycle";
    add_memory_flags(*cmd, a->memory);
    add_speculative_flags(*cmd, a->speculative);
    add_record_routing_option(*cmd, o.record_routing);
    add_template_flags(*cmd, o.template_limits, o.special_tokens_in_content);
    cmd->callback([a] {
        if (const int rc = run_serve(*a); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
