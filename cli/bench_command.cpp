// `sluice bench -m FILE [-p 64,512] [-n 128] [-r 3]`: prefill throughput per prompt length and decode throughput,
// each over fresh sessions and several repetitions, with random token ids drawn from a fixed seed.
#include "cli/bench_command.hpp"

#include "cli/common_flags.hpp"
#include "cli/json_text.hpp"
#include "cli/progress_bar.hpp"

#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/experts/replacement_policy.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <string>

namespace sluice::cli {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

/// Prompt length of the decode test: short, so the decode steps dominate.
constexpr std::uint32_t decode_prompt_tokens = 8;
/// Seed of the random token ids, fixed so runs are comparable.
constexpr std::uint64_t token_seed = 0x5eed;

/// One row of the report: a test and its throughput over the repetitions.
struct bench_result {
    std::string test;            ///< "pp64", "tg128"
    std::string kind;            ///< "prefill" or "decode"
    std::uint32_t n_tokens = 0;  ///< prompt tokens (prefill) or generated tokens (decode)
    std::vector<double> samples; ///< tokens/s of each repetition

    [[nodiscard]] double mean() const {
        return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    }
    /// Sample standard deviation (0 for a single repetition).
    [[nodiscard]] double stddev() const {
        if (samples.size() < 2) {
            return 0.0;
        }
        const double m = mean();
        double sum = 0.0;
        for (double s : samples) {
            sum += (s - m) * (s - m);
        }
        return std::sqrt(sum / static_cast<double>(samples.size() - 1));
    }
    [[nodiscard]] double min() const { return *std::min_element(samples.begin(), samples.end()); }
    [[nodiscard]] double max() const { return *std::max_element(samples.begin(), samples.end()); }
};

double ms_since(clock_type::time_point start) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

std::vector<std::int32_t> random_tokens(std::mt19937_64& rng, std::uint32_t n, std::uint32_t n_vocab) {
    std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(n_vocab) - 1);
    std::vector<std::int32_t> out(n);
    for (auto& t : out) {
        t = pick(rng);
    }
    return out;
}

/// Prefill of `prompt` in a fresh session (one sampled token, so the output row is computed); tokens/s.
asio::awaitable<result<double>> time_prefill(const std::shared_ptr<model>& m, std::uint32_t n_ctx,
                                             std::vector<std::int32_t> prompt) {
    session s(m, n_ctx);
    generate_request req;
    const auto n = static_cast<double>(prompt.size());
    req.prompt_tokens = std::move(prompt);
    req.sampling.temperature = 0.0f;
    req.max_tokens = 1;
    req.ignore_eos = true;
    auto stream = s.generate(std::move(req));
    for (;;) {
        auto ev = co_await stream.next();
        if (!ev) {
            co_return ev.error();
        }
        if (!*ev) {
            break;
        }
    }
    const double ms = stream.summary().prompt_ms;
    co_return ms > 0.0 ? n * 1000.0 / ms : 0.0;
}

/// Greedy decode of `n` tokens after a short prompt in a fresh session; tokens/s over the steps after the first
/// token (the first one carries the prefill).
asio::awaitable<result<double>> time_decode(const std::shared_ptr<model>& m, std::uint32_t n_ctx,
                                            std::vector<std::int32_t> prompt, std::uint32_t n) {
    session s(m, n_ctx);
    generate_request req;
    req.prompt_tokens = std::move(prompt);
    req.sampling.temperature = 0.0f;
    req.max_tokens = n;
    req.ignore_eos = true;
    auto stream = s.generate(std::move(req));
    std::uint32_t tokens = 0;
    clock_type::time_point first;
    double first_ms = 0.0; ///< time of the first token (prefill included)
    double ms = 0.0;       ///< time since the first token
    for (;;) {
        auto ev = co_await stream.next();
        if (!ev) {
            co_return ev.error();
        }
        if (!*ev) {
            break;
        }
        if ((*ev)->token < 0) {
            continue;
        }
        if (++tokens == 1) {
            first = clock_type::now();
            first_ms = (*ev)->ms;
        } else {
            ms = ms_since(first);
        }
    }
    if (tokens < 2) { // -n 1: only the first token to time
        co_return first_ms > 0.0 ? 1000.0 / first_ms : 0.0;
    }
    co_return ms > 0.0 ? (tokens - 1) * 1000.0 / ms : 0.0;
}

/// Every test of `opts` on a loaded model, in order: prefill per prompt length, then decode. Each test runs once
/// untimed before its repetitions.
asio::awaitable<result<std::vector<bench_result>>> run_tests(const bench_options& opts, std::shared_ptr<model> m) {
    const std::uint32_t n_vocab = static_cast<std::uint32_t>(m->vocab().size());
    std::uint32_t n_ctx = decode_prompt_tokens + opts.generate_tokens + 1;
    for (auto p : opts.prompt_lengths) {
        n_ctx = std::max(n_ctx, p + 1);
    }
    std::mt19937_64 rng(token_seed);
    std::vector<bench_result> results;
    for (auto p : opts.prompt_lengths) {
        bench_result r{"pp" + std::to_string(p), "prefill", p, {}};
        for (std::uint32_t i = 0; i <= opts.repetitions; ++i) {
            auto tps = co_await time_prefill(m, n_ctx, random_tokens(rng, p, n_vocab));
            if (!tps) {
                co_return tps.error().with_context(r.test);
            }
            if (i > 0) { // the first run warms up threads, caches and allocations
                r.samples.push_back(*tps);
            }
        }
        results.push_back(std::move(r));
    }
    if (opts.generate_tokens > 0) {
        bench_result r{"tg" + std::to_string(opts.generate_tokens), "decode", opts.generate_tokens, {}};
        for (std::uint32_t i = 0; i <= opts.repetitions; ++i) {
            auto tps =
                co_await time_decode(m, n_ctx, random_tokens(rng, decode_prompt_tokens, n_vocab), opts.generate_tokens);
            if (!tps) {
                co_return tps.error().with_context(r.test);
            }
            if (i > 0) { // warm-up, as above
                r.samples.push_back(*tps);
            }
        }
        results.push_back(std::move(r));
    }
    co_return results;
}

json::object model_json(const model& m, const std::string& routing) {
    const auto& hp = m.hparams();
    return json::object{{"path", m.path().string()},
                        {"arch", hp.arch},
                        {"n_layer", hp.n_layer},
                        {"n_embd", hp.n_embd},
                        {"n_vocab", hp.n_vocab},
                        {"n_expert", hp.n_expert},
                        {"n_expert_used", hp.n_expert_used},
                        {"weight_bytes", m.resident_bytes()},
                        {"threads", m.options().n_threads},
                        {"routing", routing.empty() ? "router" : routing},
                        {"cache_policy", experts::to_string(experts::policy_spec{m.options().cache_policy,
                                                                                 m.options().cache_pin_percent})}};
}

json::object results_json(const model& m, const std::vector<bench_result>& results, std::uint32_t reps,
                          const std::string& routing) {
    json::array rows;
    for (const auto& r : results) {
        rows.push_back(
            json::object{{"test", r.test},
                         {"kind", r.kind},
                         {"n_tokens", r.n_tokens},
                         {"repetitions", reps},
                         {"tokens_per_s",
                          json::object{{"mean", r.mean()}, {"stddev", r.stddev()}, {"min", r.min()}, {"max", r.max()}}},
                         {"samples", json::array(r.samples.begin(), r.samples.end())}});
    }
    return json::object{{"model", model_json(m, routing)}, {"memory", to_json(m.plan())}, {"results", std::move(rows)}};
}

void print_table(const model& m, const std::vector<bench_result>& results, std::uint32_t reps,
                 const std::string& routing) {
    const auto& hp = m.hparams();
    std::printf("model    %s\n", m.path().string().c_str());
    if (hp.is_moe()) {
        std::printf("arch     %s, %u layers, %u experts (%u used), n_embd %u, vocab %u\n", hp.arch.c_str(), hp.n_layer,
                    hp.n_expert, hp.n_expert_used, hp.n_embd, hp.n_vocab);
    } else {
        std::printf("arch     %s, %u layers (dense), n_embd %u, vocab %u\n", hp.arch.c_str(), hp.n_layer, hp.n_embd,
                    hp.n_vocab);
    }
    std::printf("weights  %.2f MiB resident\n", static_cast<double>(m.resident_bytes()) / 1048576.0);
    if (const auto& plan = m.plan(); plan.streams()) {
        std::printf(
            "memory   experts streamed: %llu cache slots of %.2f MiB (%.2f MiB), policy %s\n",
            static_cast<unsigned long long>(plan.cache_slots), static_cast<double>(plan.slot_bytes) / 1048576.0,
            static_cast<double>(plan.cache_bytes) / 1048576.0,
            experts::to_string(experts::policy_spec{m.options().cache_policy, m.options().cache_pin_percent}).c_str());
    }
    if (!routing.empty()) {
        std::printf("routing  replayed from %s\n", routing.c_str());
    }
    std::printf("threads  %zu\n\n", m.options().n_threads);
    std::printf("%-10s %26s %12s %12s %6s\n", "test", "tokens/s (mean ± stddev)", "min", "max", "reps");
    for (const auto& r : results) {
        char mean_sd[64];
        std::snprintf(mean_sd, sizeof mean_sd, "%.2f ± %.2f", r.mean(), r.stddev());
        std::printf("%-10s %26s %12.2f %12.2f %6u\n", r.test.c_str(), mean_sd, r.min(), r.max(), reps);
    }
}

asio::awaitable<int> run_benchmark(bench_options opts, model_options model_opts) {
    progress_bar bar;
    auto loaded = co_await model::load(opts.model, model_opts, opts.json ? load_progress{} : bar.callback());
    bar.finish(loaded.has_value());
    if (!loaded) {
        std::cerr << "sluice bench: " << loaded.error().message << "\n";
        co_return 1;
    }
    const auto m = std::move(*loaded);
    if (auto r = m->set_routing({}, opts.routing); !r) {
        std::cerr << "sluice bench: " << r.error().message << "\n";
        co_return 1;
    }
    auto results = co_await run_tests(opts, m);
    if (!results) {
        std::cerr << "sluice bench: " << results.error().message << "\n";
        co_return 1;
    }
    if (opts.json) {
        std::cout << json_text(results_json(*m, *results, opts.repetitions, opts.routing)) << "\n";
    } else {
        print_table(*m, *results, opts.repetitions, opts.routing);
    }
    co_return 0;
}

} // namespace

int run_bench(const bench_options& opts) {
    if (opts.repetitions == 0) {
        std::cerr << "sluice bench: -r must be at least 1\n";
        return 1;
    }
    for (auto p : opts.prompt_lengths) {
        if (p == 0) {
            std::cerr << "sluice bench: prompt lengths must be positive\n";
            return 1;
        }
    }
    auto memory = check_memory_flags(opts.memory);
    if (!memory) {
        std::cerr << "sluice bench: " << memory.error().message << "\n";
        return 1;
    }
    model_options model_opts;
    model_opts.n_threads = opts.threads;
    memory->apply_to(model_opts);
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, run_benchmark(opts, model_opts), [&](std::exception_ptr e, int rc) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::cerr << "sluice bench: " << ex.what() << "\n";
            }
            rc = 1;
        }
        status = rc;
    });
    ioc.run();
    return status;
}

void add_bench_command(CLI::App& app) {
    auto o = std::make_shared<bench_options>();
    auto* cmd = app.add_subcommand("bench", "Measure prefill and decode throughput (tokens/s) of a model");
    add_model_option(*cmd, o->model, "GGUF model file (any part of a split model)")->required();
    cmd->add_option("-p,--prompt-lengths", o->prompt_lengths, "Prompt lengths of the prefill tests")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-n,--generate", o->generate_tokens, "Tokens of the decode test (0: none)")->capture_default_str();
    cmd->add_option("-r,--repetitions", o->repetitions, "Repetitions of each test")->capture_default_str();
    add_threads_option(*cmd, o->threads);
    cmd->add_flag("--json", o->json, "Print the results as JSON");
    add_memory_flags(*cmd, o->memory);
    add_replay_routing_option(*cmd, o->routing);
    cmd->callback([o] {
        if (const int rc = run_bench(*o); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
