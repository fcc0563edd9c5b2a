// Engine benchmark: decode and prefill tokens/s of a model next to its decode roofline, the weight bytes one
// decoded token reads divided by the memory read bandwidth measured in the same run (interleaved with the
// decode repetitions, medians reported, because this VM's bandwidth drifts), with each repetition's share of the
// cores that the host left, and a summary of the repetitions that had both cores.
// Usage: engine_bench MODEL.gguf [threads=2] [repetitions=5]
#include "bench/bench_main.hpp"
#include "bench/kernels/machine_limits.hpp"
#include "io/dma_buffer.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/models/forward.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sluice;

using bench::run;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

std::uint64_t bytes_of(const models::weight_view& w) {
    return w ? w.rows * w.row_bytes : 0;
}

// Weight bytes one decoded token reads: every dense tensor, k experts per MoE layer, one embedding row.
std::uint64_t bytes_per_token(const model& m) {
    const auto& w = m.weights();
    const auto& hp = m.hparams();
    std::uint64_t n = w.token_embd.row_bytes + bytes_of(w.output) + bytes_of(w.output_norm);
    for (const auto& l : w.layers) {
        for (const auto* v : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm,
                              &l.ffn_norm, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.router, &l.shexp_gate_inp,
                              &l.shexp_gate, &l.shexp_up, &l.shexp_down, &l.post_attn_norm, &l.exp_probs_b,
                              &l.wq_a, &l.q_a_norm, &l.wq_b, &l.wkv_a, &l.kv_a_norm}) {
            n += v->n_expert ? 0 : bytes_of(*v);
        }
        n += hp.n_head * (bytes_of(l.wk_b) + bytes_of(l.wv_b)); // MLA's 3-D decompressions: one slab per head
        if (hp.is_moe()) {
            n +=
                hp.n_expert_used * (l.gate_exps.expert_stride + l.up_exps.expert_stride + l.down_exps.expert_stride);
        }
    }
    return n;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t vocab, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> ids(n);
    for (auto& id : ids) {
        id = static_cast<std::int32_t>(rng() % vocab);
    }
    return ids;
}

// Seconds to prefill `n` tokens into a fresh cache (last token's logits only, as generation needs).
double prefill_seconds(const std::shared_ptr<model>& m, std::size_t n, std::uint32_t seed) {
    models::kv_cache cache(models::cache_layout_of(m->arch(), m->hparams()), static_cast<std::uint32_t>(n + 8),
                           kernels::quant_type::f16, m->options().n_batch);
    models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), m->options().n_batch);
    const auto tokens = random_tokens(n, m->hparams().n_vocab, seed);
    std::vector<float> logits;
    const double t0 = bench::now_seconds();
    auto r = run<result<void>>([&] { return runner.forward(cache, tokens, models::logits_mode::last, logits); });
    if (!r) {
        std::fprintf(stderr, "prefill: %s\n", r.error().message.c_str());
        std::exit(1);
    }
    return bench::now_seconds() - t0;
}

// Decode tokens/s over `n` greedy tokens after a 16-token prompt.
double decode_tokens_per_s(const std::shared_ptr<model>& m, std::uint32_t n, std::uint32_t seed) {
    session s(m, 64 + n);
    generate_request req;
    req.prompt_tokens = random_tokens(16, m->hparams().n_vocab, seed);
    req.sampling.temperature = 0.0f;
    req.max_tokens = n;
    req.ignore_eos = true;
    auto stream = s.generate(std::move(req));
    run<int>([&]() -> boost::asio::awaitable<int> {
        while (true) {
            auto ev = co_await stream.next();
            if (!ev || !*ev) {
                co_return 0;
            }
        }
    });
    const auto& sum = stream.summary();
    // decode_ms covers the steps after the first token (whose time is the prefill's).
    return (sum.completion_tokens - 1) / (sum.decode_ms / 1000.0);
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: engine_bench MODEL.gguf [threads=2] [repetitions=5]\n");
        return 2;
    }
    const auto threads_arg = bench::count_arg("engine_bench", argc, argv, 2, 2);
    const auto reps_arg = bench::count_arg("engine_bench", argc, argv, 3, 5);
    if (!threads_arg || !reps_arg) {
        return 2;
    }
    if (*threads_arg == 0 || *threads_arg > 1024 || *reps_arg == 0 || *reps_arg > 10000) {
        std::fprintf(stderr, "engine_bench: threads must be 1-1024 and repetitions 1-10000\n");
        return 2;
    }
    const std::size_t threads = *threads_arg;
    const int reps = static_cast<int>(*reps_arg);
    model_options opts;
    opts.n_threads = threads;
    opts.n_ctx = 1024;
    opts.n_batch = 512;
    const double t_load = bench::now_seconds();
    auto loaded = run<result<std::shared_ptr<model>>>([&] { return model::load(argv[1], opts); });
    if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
        return 1;
    }
    const auto m = *loaded;
    const double load_s = bench::now_seconds() - t_load;
    const std::uint64_t per_token = bytes_per_token(*m);
    std::printf("model      %s (%s, %u layers, %u experts / %u used)\n", argv[1], m->hparams().arch.c_str(),
                m->hparams().n_layer, m->hparams().n_expert, m->hparams().n_expert_used);
    std::printf("weights    %.2f GB resident, loaded in %.1f s (%.2f GB/s)\n", m->resident_bytes() / 1e9, load_s,
                m->resident_bytes() / 1e9 / load_s);
    if (const auto& plan = m->plan(); plan.streams()) {
        // The default budget is 80 % of MemAvailable: with other processes holding memory the plan streams, and
        // every figure below includes expert reads from disk. Say so before any of them.
        const double whole = static_cast<double>(plan.dense_bytes + plan.expert_bytes + plan.kv_bytes +
                                                 plan.compute_bytes);
        std::printf("NOT RESIDENT: the plan streams routed experts (budget %.2f GB, resident needs %.2f GB); "
                    "the figures below include disk reads\n",
                    static_cast<double>(plan.budget) / 1e9, whole / 1e9);
    }
    std::printf("per token  %.3f GB of weights read by one decoded token\n", per_token / 1e9);
    std::printf("threads    %zu\n\n", threads);

    // Bandwidth samples interleaved with decode runs: the same threads (pool workers) read a 2 GiB buffer.
    io::dma_buffer buf(std::size_t{2} << 30);
    std::memset(buf.data(), 1, buf.size());
    runtime::compute_pool bw_pool(threads - 1);
    runtime::compute_pool one_pool(0);
    // How much of the cores this VM's host leaves us: the FMA peak of `threads` threads against `threads` times
    // one thread's. On a shared host the second core can run at 50-60 % for minutes; this makes that visible.
    auto cores_available = [&] {
        const auto isa = kernels::active_isa();
        return bench::peak_gflops(isa, threads, bw_pool) /
               (static_cast<double>(threads) * bench::peak_gflops(isa, 1, one_pool));
    };
    // Each repetition: core share, a bandwidth sample, a decode run, core share again. The roofline of a
    // repetition uses its own bandwidth sample; repetitions during which the host left less than 90 % of the
    // cores are reported but kept out of the "clean" summary.
    struct repetition {
        double bw, decode, cores;
    };
    std::vector<repetition> runs;
    decode_tokens_per_s(m, 8, 99); // warm-up
    for (int r = 0; r < reps; ++r) {
        const double before = cores_available();
        const double bw =
            bench::read_bandwidth_gbs(bw_pool, threads, reinterpret_cast<const std::uint8_t*>(buf.data()), buf.size());
        const double dec = decode_tokens_per_s(m, 64, static_cast<std::uint32_t>(r));
        runs.push_back({bw, dec, std::min(before, cores_available())});
        const double roof = bw * 1e9 / static_cast<double>(per_token);
        std::printf("rep %-2d  read %.1f GB/s  decode %.2f tokens/s  roofline %.2f -> %.0f%%  cores %.0f%%\n", r + 1,
                    bw, dec, roof, 100 * dec / roof, 100 * runs.back().cores);
        std::fflush(stdout);
    }
    auto summarize = [&](const char* label, bool clean_only) {
        std::vector<double> bw, dec, frac;
        for (const auto& r : runs) {
            if (clean_only && r.cores < 0.9) {
                continue;
            }
            bw.push_back(r.bw);
            dec.push_back(r.decode);
            frac.push_back(r.decode * static_cast<double>(per_token) / (r.bw * 1e9));
        }
        if (dec.empty()) {
            std::printf("%-15s none\n", label);
            return;
        }
        std::printf("%-15s %zu of %zu reps: decode median %.2f tokens/s (%.2f-%.2f), read median %.1f GB/s, "
                    "decode at %.0f%% of the roofline (median of per-rep ratios; %.1f GB/s effective)\n",
                    label, dec.size(), runs.size(), median(dec), *std::min_element(dec.begin(), dec.end()),
                    *std::max_element(dec.begin(), dec.end()), median(bw), 100 * median(frac),
                    median(dec) * static_cast<double>(per_token) / 1e9);
    };
    summarize("all", false);
    summarize("cores >= 90%", true);
    std::printf("\n");
    for (const std::size_t n : {std::size_t{64}, std::size_t{512}}) {
        std::vector<double> tps;
        for (int r = 0; r < std::max(1, reps / 2); ++r) {
            tps.push_back(static_cast<double>(n) / prefill_seconds(m, n, 1000 + static_cast<std::uint32_t>(r)));
        }
        std::printf("prefill %-4zu    median %.2f tokens/s (min %.2f, max %.2f)\n", n, median(tps),
                    *std::min_element(tps.begin(), tps.end()), *std::max_element(tps.begin(), tps.end()));
    }
    return 0;
}
