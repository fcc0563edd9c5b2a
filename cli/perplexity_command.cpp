// `sluice perplexity -m FILE -f TEXT [--ctx N] [--json]`: perplexity as llama.cpp's `llama-perplexity` computes
// it. The whole text is tokenized once (no BOS/EOS added, special-token text not parsed) and cut into
// non-overlapping windows of N tokens; a remainder shorter than N is dropped. Each window is evaluated from an
// empty context (if the vocabulary adds a BOS token, it replaces the window's first token, as llama.cpp does),
// and only its second half is scored: the tokens at positions N/2+1 .. N-1, each from the logits one position
// earlier, so every scored token has at least N/2 tokens of context. Perplexity = exp(mean negative
// log-likelihood) over all scored tokens. tools/train/train.py computes the same in PyTorch.
#include "cli/perplexity_command.hpp"

#include "cli/common_flags.hpp"
#include "cli/json_text.hpp"
#include "cli/progress_bar.hpp"

#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sluice::cli {
namespace {

namespace asio = boost::asio;

/// Running totals over the scored tokens.
struct score {
    double nll = 0.0;       ///< sum of -log p(token)
    std::size_t scored = 0; ///< tokens scored
    std::size_t chunks = 0; ///< windows evaluated
};

/// -log softmax(logits)[target], in double precision.
double negative_log_likelihood(const float* logits, std::size_t n_vocab, std::int32_t target) {
    double max = logits[0];
    for (std::size_t i = 1; i < n_vocab; ++i) {
        max = std::max(max, double(logits[i]));
    }
    double sum = 0.0;
    for (std::size_t i = 0; i < n_vocab; ++i) {
        sum += std::exp(double(logits[i]) - max);
    }
    return std::log(sum) + max - double(logits[target]);
}

/// Scores every full window of `tokens`; prints the running perplexity per window to stderr unless quiet.
asio::awaitable<result<score>> score_windows(std::shared_ptr<model> m, std::vector<std::int32_t> tokens,
                                             std::uint32_t ctx, bool quiet) {
    const auto& vocab = m->vocab().description();
    const std::size_t n_vocab = vocab.tokens.size();
    const std::size_t first = ctx / 2;
    score s;
    session sess(m, ctx);
    std::vector<float> logits;
    for (std::size_t start = 0; start + ctx <= tokens.size(); start += ctx) {
        std::vector<std::int32_t> window(tokens.begin() + std::ptrdiff_t(start),
                                         tokens.begin() + std::ptrdiff_t(start + ctx));
        if (vocab.add_bos && vocab.bos) {
            window[0] = *vocab.bos;
        }
        sess.reset();
        if (auto r = co_await sess.evaluate(window, logits); !r) {
            co_return r.error();
        }
        const std::size_t row = logits.size() / ctx;
        if (row < n_vocab) {
            co_return make_error(std::errc::invalid_argument, "the model returned fewer logits than its vocabulary");
        }
        for (std::size_t j = first; j + 1 < ctx; ++j) {
            s.nll += negative_log_likelihood(logits.data() + j * row, row, window[j + 1]);
            ++s.scored;
        }
        ++s.chunks;
        if (!quiet) {
            std::fprintf(stderr, "[%zu]%.4f%s", s.chunks, std::exp(s.nll / double(s.scored)),
                         start + 2 * ctx <= tokens.size() ? "," : "\n");
        }
    }
    co_return s;
}

asio::awaitable<int> run(perplexity_options o, std::string text) {
    model_options mo;
    mo.n_ctx = o.ctx;
    mo.n_threads = o.threads;
    mo.kv_type = o.kv_f32 ? kv_cache_type::f32 : kv_cache_type::f16;
    progress_bar bar;
    auto loaded = co_await model::load(o.model, mo, o.json ? load_progress{} : bar.callback());
    bar.finish(loaded.has_value());
    if (loaded) {
        warn_if_ctx_exceeds_training("perplexity", o.ctx, (*loaded)->hparams().n_ctx_train);
    }
    if (!loaded) {
        std::cerr << "sluice perplexity: " << loaded.error().message << "\n";
        co_return 1;
    }
    auto m = std::move(*loaded);
    auto tokens = m->vocab().encode(text, {.add_special = false, .parse_special = false});
    if (tokens.size() < o.ctx) {
        std::cerr << "sluice perplexity: " << o.file << " has " << tokens.size() << " tokens; --ctx " << o.ctx
                  << " needs at least " << o.ctx << " (one full window)\n";
        co_return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t n_tokens = tokens.size();
    auto s = co_await score_windows(m, std::move(tokens), o.ctx, o.json);
    if (!s) {
        std::cerr << "sluice perplexity: " << s.error().message << "\n";
        co_return 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double mean = s->nll / double(s->scored);
    if (o.json) {
        boost::json::object j{
            {"perplexity", std::exp(mean)}, {"mean_nll", mean}, {"tokens", n_tokens}, {"scored", s->scored},
            {"chunks", s->chunks},          {"ctx", o.ctx},     {"seconds", seconds}};
        std::cout << json_text(j) << "\n";
    } else {
        std::printf("perplexity: %.4f (mean nll %.6f) over %zu scored tokens: %zu windows of %u tokens, %zu tokens "
                    "in the text, %.1f s\n",
                    std::exp(mean), mean, s->scored, s->chunks, o.ctx, n_tokens, seconds);
    }
    co_return 0;
}

} // namespace

int run_perplexity(const perplexity_options& o) {
    if (o.ctx < 4) {
        std::cerr << "sluice perplexity: --ctx " << o.ctx << ": expected at least 4\n";
        return 1;
    }
    std::ifstream in(o.file, std::ios::binary);
    if (!in) {
        std::cerr << "sluice perplexity: " << o.file << ": cannot open\n";
        return 1;
    }
    std::string text(std::istreambuf_iterator<char>(in), {});
    if (in.bad()) {
        std::cerr << "sluice perplexity: " << o.file << ": read error\n";
        return 1;
    }
    asio::io_context ioc;
    auto fut = asio::co_spawn(ioc, run(o, std::move(text)), asio::use_future);
    ioc.run();
    try {
        return fut.get();
    } catch (const std::exception& e) {
        std::cerr << "sluice perplexity: " << e.what() << "\n";
        return 1;
    }
}

void add_perplexity_command(CLI::App& app) {
    auto o = std::make_shared<perplexity_options>();
    auto* cmd = app.add_subcommand("perplexity", "Perplexity of a model on a text file (llama.cpp's definition)");
    add_model_option(*cmd, o->model, "GGUF model file")->required();
    cmd->add_option("-f,--file", o->file, "UTF-8 text file to score")->required();
    add_ctx_option(*cmd, o->ctx, "Tokens per window; the second half of each window is scored")
        ->check(CLI::Range(std::uint32_t{2}, max_ctx));
    add_threads_option(*cmd, o->threads);
    cmd->add_flag("--kv-f32", o->kv_f32, "Keep the KV cache in F32 instead of F16");
    cmd->add_flag("--json", o->json, "Print one JSON object instead of text and per-window progress");
    cmd->callback([o] {
        if (const int rc = run_perplexity(*o); rc != 0) {
            throw CLI::RuntimeError(rc);
        }
    });
}

} // namespace sluice::cli
