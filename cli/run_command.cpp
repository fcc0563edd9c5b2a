// `sluice run -m FILE -p TEXT [...]`: loads a model, generates from one prompt on an io_context and streams the
// text to stdout (or prints one JSON object with --json); statistics go to stderr. Ctrl-C cancels the generation.
#include "cli/run_command.hpp"

#include "cli/common_flags.hpp"
#include "cli/default_model.hpp"
#include "cli/json_text.hpp"
#include "cli/progress_bar.hpp"

#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/generate/sampler.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace sluice::cli {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;

double rate(std::uint64_t n, double ms) {
    return ms > 0.0 ? static_cast<double>(n) * 1000.0 / ms : 0.0;
}

/// The request `opts` describe; its sampling parameters are not checked yet.
generate_request make_request(const run_options& opts, std::uint64_t seed) {
    generate_request req;
    if (opts.chat) {
        req.messages.push_back(json::object{{"role", "user"}, {"content", opts.prompt}});
    } else {
        req.prompt = opts.prompt;
    }
    req.sampling.temperature = opts.temperature;
    req.sampling.top_k = opts.top_k;
    req.sampling.top_p = opts.top_p;
    req.sampling.min_p = opts.min_p;
    req.sampling.repeat_penalty = opts.repeat_penalty;
    req.sampling.seed = seed;
    req.max_tokens = opts.max_tokens;
    req.stop = opts.stop;
    req.ignore_eos = opts.ignore_eos;
    return req;
}

/// What the generation produced, for the statistics and --json.
struct run_report {
    std::vector<std::int32_t> prompt_tokens;
    std::vector<std::int32_t> tokens;
    std::string text;
    std::vector<double> per_token_ms;
    generation_summary summary;
    std::uint64_t seed = 0;
    std::optional<experts::expert_cache_counters> experts; ///< when the model streams its experts
};

/// What the expert cache did during the run.
json::object experts_json(const experts::expert_cache_counters& c) {
    return json::object{{"bytes_read", c.bytes_read},
                        {"reads", c.reads},
                        {"read_gbps", c.read_bytes_per_s() / 1e9},
                        {"bytes_per_token", c.bytes_per_token()},
                        {"hits", c.hits},
                        {"misses", c.misses},
                        {"hit_rate", c.hit_rate()},
                        {"prefetch_issued", c.prefetch_issued},
                        {"prefetch_used", c.prefetch_used},
                        {"prefetch_wasted", c.prefetch_wasted},
                        {"prefetch_accuracy", c.prefetch_accuracy()},
                        {"prefetch2_issued", c.prefetch2_issued},
                        {"prefetch2_used", c.prefetch2_used},
                        {"prefetch2_wasted", c.prefetch2_wasted},
                        {"slots", c.slots}};
}

/// Decode throughput: the steps after the first token (the first one comes from the prefill's logits).
struct decode_rate {
    std::size_t steps = 0;
    double ms = 0.0;
    [[nodiscard]] double per_second() const { return rate(steps, ms); }
};

decode_rate decode_of(const run_report& r) {
    decode_rate d;
    for (std::size_t i = 1; i < r.per_token_ms.size(); ++i) {
        ++d.steps;
        d.ms += r.per_token_ms[i];
    }
    return d;
}

json::object report_json(const run_report& r) {
    const auto& s = r.summary;
    const auto decode = decode_of(r);
    json::array per_token(r.per_token_ms.begin(), r.per_token_ms.end());
    json::object out{
        {"prompt_tokens", json::array(r.prompt_tokens.begin(), r.prompt_tokens.end())},
        {"tokens", json::array(r.tokens.begin(), r.tokens.end())},
        {"text", r.text},
        {"finish_reason", to_string(s.reason)},
        {"seed", r.seed},
        {"timings", json::object{{"prompt_ms", s.prompt_ms},
                                 {"prompt_tokens_per_s", rate(s.prompt_tokens - s.cached_tokens, s.prompt_ms)},
                                 {"decode_ms", decode.ms},
                                 {"decode_tokens_per_s", decode.per_second()},
                                 {"per_token_ms", std::move(per_token)}}},
    };
    if (r.experts) {
        out["experts"] = experts_json(*r.experts);
    }
    if (s.verify_steps > 0) {
        out["speculative"] = json::object{{"drafted_tokens", s.drafted_tokens}, {"accepted_tokens", s.accepted_tokens},
                                          {"verify_steps", s.verify_steps},     {"draft_ms", s.draft_ms},
                                          {"verify_ms", s.verify_ms},           {"verify_wait_ms", s.verify_wait_ms}};
    }
    json::array steps;
    for (const auto& st : s.steps) {
        steps.push_back(json::array{st.positions, st.accepted, st.ms, st.wait_ms, st.expert_reads, st.predicted_reads});
    }
    out["decode_steps"] = json::object{{"plain_steps", s.plain_steps},
                                       {"plain_ms", s.plain_ms},
                                       {"plain_wait_ms", s.plain_wait_ms},
                                       {"trace", std::move(steps)}};
    return out;
}

void print_statistics(const run_report& r) {
    const auto& s = r.summary;
    std::fprintf(stderr, "prompt     %u tokens in %.1f ms, %.1f tokens/s\n", s.prompt_tokens, s.prompt_ms,
                 rate(s.prompt_tokens - s.cached_tokens, s.prompt_ms));
    const auto decode = decode_of(r);
    std::fprintf(stderr, "generated  %u tokens, %zu decode steps in %.1f ms, %.1f tokens/s\n", s.completion_tokens,
                 decode.steps, decode.ms, decode.per_second());
    if (s.verify_steps > 0) {
        std::fprintf(stderr, "drafts     %u drafted, %u accepted (%.0f%%) in %u verifications, %.1f ms drafting\n",
                     s.drafted_tokens, s.accepted_tokens, 100.0 * s.accepted_tokens / s.drafted_tokens, s.verify_steps,
                     s.draft_ms);
    }
    std::fprintf(stderr, "finish     %s (seed %llu)\n", std::string(to_string(s.reason)).c_str(),
                 static_cast<unsigned long long>(r.seed));
    if (r.experts) {
        const auto& c = *r.experts;
        std::fprintf(stderr,
                     "experts    %.1f MB read from disk in %llu reads (%.2f GB/s while reading), hit rate %.1f%%, "
                     "prefetch %.0f%% used, %llu cache slots\n",
                     static_cast<double>(c.bytes_read) / 1e6, static_cast<unsigned long long>(c.reads),
                     c.read_bytes_per_s() / 1e9, 100.0 * c.hit_rate(), 100.0 * c.prefetch_accuracy(),
                     static_cast<unsigned long long>(c.slots));
    }
}

/// Pulls every event of `stream` into `report`, writing each piece of text to stdout as it comes when `print`.
asio::awaitable<result<void>> consume(token_stream& stream, bool print, run_report& report) {
    for (;;) {
        auto ev = co_await stream.next();
        if (!ev) {
            co_return ev.error();
        }
        if (!*ev) {
            break;
        }
        if ((*ev)->token >= 0) {
            report.per_token_ms.push_back((*ev)->ms);
        }
        const std::string& piece = (*ev)->text; // valid UTF-8: the stream decoder guarantees it
        report.text += piece;
        if (print && !piece.empty()) {
            std::cout << piece << std::flush;
        }
    }
    report.tokens = stream.tokens();
    report.summary = stream.summary();
    co_return result<void>{};
}

/// Loads, generates and prints; returns the exit status. Cancellation (Ctrl-C) ends the generation early.
asio::awaitable<int> run_generation(run_options opts, model_options model_opts, std::uint64_t seed) {
    // A cancellation (Ctrl-C) ends the stream with finish_reason::cancelled instead of throwing from co_await.
    co_await asio::this_coro::throw_if_cancelled(false);
    auto req = make_request(opts, seed);
    progress_bar bar;
    auto loaded = co_await model::load(opts.model, model_opts, bar.callback());
    bar.finish(loaded.has_value());
    if (!loaded) {
        std::cerr << "sluice run: " << loaded.error().message << "\n";
        co_return 1;
    }
    auto m = std::move(*loaded);
    if (auto r = m->set_routing(opts.record_routing, opts.replay_routing); !r) {
        std::cerr << "sluice run: " << r.error().message << "\n";
        co_return 1;
    }
    warn_if_ctx_exceeds_training("run", opts.ctx, m->hparams().n_ctx_train);
    if (opts.chat && !m->chat_template()) {
        std::cerr << "sluice run: " << opts.model << ": the model has no chat template (drop --chat)\n";
        co_return 1;
    }
    session sess(m, opts.ctx);
    run_report report;
    report.seed = seed;
    auto prompt = sess.prompt_tokens(req);
    if (!prompt) {
        std::cerr << "sluice run: " << prompt.error().message << "\n";
        co_return 1;
    }
    report.prompt_tokens = *prompt;
    req.prompt_tokens = std::move(*prompt);

    auto stream = sess.generate(std::move(req));
    if (auto r = co_await consume(stream, !opts.json, report); !r) {
        std::cout.flush();
        std::cerr << "\nsluice run: " << r.error().message << "\n";
        co_return 1;
    }
    if (m->plan().streams()) {
        report.experts = m->expert_counters();
    }
    if (opts.json) {
        std::cout << json_text(report_json(report)) << "\n";
    } else {
        std::cout << "\n" << std::flush;
    }
    print_statistics(report);
    co_return 0;
}

} // namespace

int run_run(const run_options& given) {
    run_options opts = given;
    const auto chosen = model_or_bundled(opts.model, "run");
    if (!chosen) {
        return 1;
    }
    opts.model = *chosen;
    const std::uint64_t seed = opts.seed ? *opts.seed : std::random_device{}();
    sampling_params p;
    p.temperature = opts.temperature;
    p.top_k = opts.top_k;
    p.top_p = opts.top_p;
    p.min_p = opts.min_p;
    p.repeat_penalty = opts.repeat_penalty;
    if (auto ok = runtime::validate(p); !ok) {
        std::cerr << "sluice run: " << ok.error().message << "\n";
        return 1;
    }

    auto memory = check_memory_flags(opts.memory);
    if (!memory) {
        std::cerr << "sluice run: " << memory.error().message << "\n";
        return 1;
    }
    model_options model_opts;
    model_opts.n_ctx = opts.ctx;
    model_opts.n_threads = opts.threads;
    model_opts.template_limits = opts.template_limits;
    model_opts.special_tokens_in_content = opts.special_tokens_in_content;
    memory->apply_to(model_opts);
    if (auto ok = check_speculative_flags(opts.speculative); !ok) {
        std::cerr << "sluice run: " << ok.error().message << "\n";
        return 1;
    }
    opts.speculative.apply_to(model_opts);

    asio::io_context ioc;
    asio::cancellation_signal cancel;
    asio::signal_set interrupts(ioc, SIGINT, SIGTERM);
    interrupts.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec) {
            cancel.emit(asio::cancellation_type::terminal);
        }
    });
    int status = 1;
    asio::co_spawn(ioc, run_generation(opts, model_opts, seed),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, int rc) {
                       interrupts.cancel();
                       if (e) {
                           try {
                               std::rethrow_exception(e);
                           } catch (const std::exception& ex) {
                               std::cerr << "sluice run: " << ex.what() << "\n";
                           }
                           rc = 1;
                       }
                       status = rc;
                   }));
    ioc.run();
    return status;
}

void add_run_command(CLI::App& app) {
    auto o = std::make_shared<run_options>();
    auto* cmd = app.add_subcommand("run", "Generate text from a prompt, streaming it to stdout");
    add_model_option(*cmd, o->model,
                     "GGUF model file (any part of a split model); default: the bundled sluice-tiny-moe");
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->required();
    cmd->add_flag("--chat", o->chat, "Send the prompt as one user message through the model's chat template");
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Most tokens to generate (0: until the end)")
        ->check(CLI::Range(std::uint32_t{0}, max_ctx))
        ->capture_default_str();
    cmd->add_option("--temp", o->temperature, "Temperature (<= 0: greedy)")->capture_default_str();
    cmd->add_option("--top-k", o->top_k, "Top-k (<= 0: off)")->capture_default_str();
    cmd->add_option("--top-p", o->top_p, "Top-p in (0, 1] (1: off)")->capture_default_str();
    cmd->add_option("--min-p", o->min_p, "Min-p in [0, 1] (0: off)")->capture_default_str();
    cmd->add_option("--repeat-penalty", o->repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
    cmd->add_option("--seed", o->seed, "Sampling seed (default: random)");
    add_ctx_option(*cmd, o->ctx, "Context size (0: the model's default)");
    add_threads_option(*cmd, o->threads);
    cmd->add_option("--stop", o->stop, "Stop string (repeatable; never part of the output)");
    cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating past end-of-generation tokens");
    cmd->add_flag("--json", o->json, "Print one JSON object (tokens, text, timings) instead of streaming text");
    add_memory_flags(*cmd, o->memory);
    add_speculative_flags(*cmd, o->speculative);
    add_record_routing_option(*cmd, o->record_routing);
    add_replay_routing_option(*cmd, o->replay_routing);
    add_template_flags(*cmd, o->template_limits, o->special_tokens_in_content);
    cmd->callback([o] {
        if (const int rc = run_run(*o); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
