// Pass benchmark: the time of one forward pass by the number of positions in it, in a warm session-like loop
// (one io_context, the model's compute pool, a cache holding a prompt; each pass is rolled back afterwards), so
// a verification of k drafted tokens can be set against a one-token decode step. Medians of many passes.
// Usage: pass_bench MODEL.gguf [threads=2] [passes=400] [positions...=1 2 3 4 5 8]
#include "bench/bench_main.hpp"
#include "runtime/compute/team.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/models/forward.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace {

using namespace sluice;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: pass_bench MODEL.gguf [threads=2] [passes=400] [positions...]\n");
        return 2;
    }
    const auto threads = bench::count_arg("pass_bench", argc, argv, 2, 2);
    const auto passes = bench::count_arg("pass_bench", argc, argv, 3, 400);
    if (!threads || !passes || *threads == 0 || *threads > 1024 || *passes == 0 || *passes > 100000) {
        std::fprintf(stderr, "pass_bench: threads must be 1-1024 and passes 1-100000\n");
        return 2;
    }
    std::vector<std::uint32_t> positions;
    for (int i = 4; i < argc; ++i) {
        const auto p = bench::count_arg("pass_bench", argc, argv, i, 1);
        if (!p || *p == 0 || *p > 64) {
            std::fprintf(stderr, "pass_bench: positions must be 1-64\n");
            return 2;
        }
        positions.push_back(static_cast<std::uint32_t>(*p));
    }
    if (positions.empty()) {
        positions = {1, 2, 3, 4, 5, 8};
    }
    model_options opts;
    opts.n_threads = *threads;
    opts.n_ctx = 256;
    opts.n_batch = 64;
    auto loaded = bench::run<result<std::shared_ptr<model>>>([&] { return model::load(argv[1], opts); });
    if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
        return 1;
    }
    const auto m = *loaded;
    std::mt19937 rng(7);
    std::vector<std::int32_t> tokens(64);
    for (auto& t : tokens) {
        t = static_cast<std::int32_t>(rng() % m->hparams().n_vocab);
    }
    constexpr std::uint32_t prompt = 32;
    std::vector<std::vector<double>> us(positions.size());
    std::vector<double> empty_us;
    // Barrier waits in one pass of a decoder MoE layer stack (attention 7, routing 4, experts 5, output 1).
    const std::uint32_t barriers = 16 * m->hparams().n_layer + 2;
    auto r = bench::run<result<void>>([&]() -> boost::asio::awaitable<result<void>> {
        models::kv_cache cache(models::cache_layout_of(m->arch(), m->hparams()), 256, kernels::quant_type::f16, 64);
        models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), 64);
        std::vector<float> logits;
        if (auto ok =
                co_await runner.forward(cache, std::span(tokens).first(prompt), models::logits_mode::last, logits);
            !ok) {
            co_return ok;
        }
        // Passes alternate between the lengths so that drift on a shared machine touches them all alike.
        for (std::uint64_t i = 0; i < *passes + 20; ++i) {
            for (std::size_t j = 0; j < positions.size(); ++j) {
                const auto span = std::span(tokens).subspan(prompt, positions[j]);
                const auto t0 = std::chrono::steady_clock::now();
                if (auto ok = co_await runner.forward(cache, span, models::logits_mode::all, logits); !ok) {
                    co_return ok;
                }
                const auto t1 = std::chrono::steady_clock::now();
                cache.truncate(prompt);
                if (i >= 20) { // the first passes warm caches and threads
                    us[j].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
                }
            }
        }
        // The fixed part of a pass: team jobs doing nothing but the barrier waits of one pass.
        for (std::uint64_t i = 0; i < *passes + 20; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            co_await runtime::run_team(m->pool(), [&](std::size_t, std::size_t, runtime::team_barrier& b) {
                for (std::uint32_t w = 0; w < barriers; ++w) {
                    b.wait();
                }
            });
            const auto t1 = std::chrono::steady_clock::now();
            if (i >= 20) {
                empty_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            }
        }
        co_return result<void>{};
    });
    if (!r) {
        std::fprintf(stderr, "%s\n", r.error().message.c_str());
        return 1;
    }
    std::printf("model %s, %lu threads, %lu passes per length (median)\n", argv[1], *threads, *passes);
    std::printf("%9s %10s %10s %12s\n", "positions", "us/pass", "x 1-pos", "us/position");
    const double one = median(us[0]) * (positions[0] == 1 ? 1.0 : 0.0);
    for (std::size_t j = 0; j < positions.size(); ++j) {
        const double med = median(us[j]);
        std::printf("%9u %10.1f %9.2fx %12.1f\n", positions[j], med, one > 0 ? med / one : 0.0, med / positions[j]);
    }
    std::printf("an empty team job with %u barrier waits (a pass's fixed part): %.1f us\n", barriers, median(empty_us));
    return 0;
}
