// Sampler benchmark: microseconds per token for what the server runs after each step, on logits shaped like a
// model's output (151,936 values, Qwen3's vocabulary, drawn from a normal distribution).
// Usage: sampler_bench [N_VOCAB [CALLS]]
#include "bench/bench_main.hpp"
#include "runtime/generate/sampler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace {

using sluice::runtime::sampler;
using sluice::runtime::sampling_params;

// Median microseconds of `calls` calls of sample_detailed (logprob of the chosen token, `n_top` alternatives).
double time_sampler(const sampling_params& p, const std::vector<std::vector<float>>& rows, std::size_t calls,
                    std::size_t n_top, float& checksum) {
    sampler s(p, rows[0].size());
    std::vector<sluice::token_logprob> top;
    std::vector<double> us;
    for (std::size_t i = 0; i < calls; ++i) {
        const auto& row = rows[i % rows.size()];
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = s.sample_detailed(row, n_top, top);
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        checksum += r.logprob + static_cast<float>(r.token);
        s.accept(r.token);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const auto n_vocab = sluice::bench::count_arg("sampler_bench", argc, argv, 1, 151936);
    const auto calls = sluice::bench::count_arg("sampler_bench", argc, argv, 2, 400);
    if (!n_vocab || !calls || *n_vocab == 0 || *calls == 0) {
        return 2;
    }
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::vector<std::vector<float>> rows(8, std::vector<float>(*n_vocab));
    for (auto& row : rows) {
        for (auto& v : row) {
            v = dist(rng);
        }
    }
    float checksum = 0;
    std::printf("sampler_bench: %lu logits, %lu calls, median microseconds per token\n\n", *n_vocab, *calls);
    std::printf("| sampling | logprobs | us per token |\n|---|---|---:|\n");
    sampling_params greedy;
    greedy.temperature = 0.0f;
    sampling_params top_k = greedy;
    top_k.temperature = 0.8f;
    top_k.top_k = 40;
    top_k.top_p = 0.95f;
    sampling_params full = top_k;
    full.top_k = 0;
    std::printf("| greedy | chosen token | %.1f |\n", time_sampler(greedy, rows, *calls, 0, checksum));
    std::printf("| greedy | chosen + top 5 | %.1f |\n", time_sampler(greedy, rows, *calls, 5, checksum));
    std::printf("| temperature 0.8, top-k 40, top-p 0.95 | chosen token | %.1f |\n",
                time_sampler(top_k, rows, *calls, 0, checksum));
    std::printf("| temperature 0.8, top-p 0.95, min-p 0.05 | chosen token | %.1f |\n",
                time_sampler(full, rows, *calls, 0, checksum));
    std::printf("\n(checksum %g)\n", static_cast<double>(checksum));
    return 0;
}
