// The gated delta rule at Qwen3.5-35B-A3B's geometry (32 value heads of 128 x 128, 16 key heads), one thread, at
// every ISA level: decode (the recurrent form, one token) and prefill (recurrent against chunked) per token of one
// layer, with the arithmetic rate. Usage: delta_net_bench [prefill_tokens=512] [repetitions=5]
#include "bench/bench_main.hpp"
#include "kernels/delta_net.hpp"
#include "kernels/isa.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sluice::kernels;

struct inputs {
    delta_net_shape s;
    std::vector<float> qk, v, g, beta, state, out;
};

inputs make_inputs(std::size_t n_tokens) {
    inputs in;
    auto& s = in.s;
    s.n_tokens = n_tokens;
    s.n_heads = 32;
    s.n_k_heads = 16;
    s.order = delta_head_order::tiled;
    s.dk = s.dv = 128;
    s.q_stride = s.k_stride = 2 * s.n_k_heads * s.dk;
    s.v_stride = s.out_stride = s.n_heads * s.dv;
    s.gate_stride = s.n_heads;
    s.q_scale = 1.0f / std::sqrt(128.0f);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.09f); // about unit-norm heads of 128
    std::uniform_real_distribution<float> decay(-1.0f, -0.01f), strength(0.1f, 0.9f);
    in.qk.resize(n_tokens * s.q_stride);
    in.v.resize(n_tokens * s.v_stride);
    for (auto& x : in.qk) {
        x = normal(rng);
    }
    for (auto& x : in.v) {
        x = normal(rng) * 10.0f;
    }
    for (std::size_t i = 0; i < n_tokens * s.n_heads; ++i) {
        in.g.push_back(decay(rng));
        in.beta.push_back(strength(rng));
    }
    in.state.assign(s.n_heads * s.dk * s.dv, 0.0f);
    in.out.assign(n_tokens * s.out_stride, 0.0f);
    return in;
}

/// Best of `reps` runs, in seconds.
template <class F>
double best_time(unsigned long reps, F&& f) {
    double best = 1e30;
    for (unsigned long r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

} // namespace

int main(int argc, char** argv) {
    const auto prefill = sluice::bench::count_arg("delta_net_bench", argc, argv, 1, 512);
    const auto reps = sluice::bench::count_arg("delta_net_bench", argc, argv, 2, 5);
    if (!prefill || !reps || *prefill == 0 || *reps == 0) {
        return 2;
    }
    // Useful arithmetic per token and head: S^T k, the update and S^T q, one multiply-add each per state element.
    const double flop_per_token = 32.0 * 128 * 128 * 3 * 2;
    std::printf("%-8s %-24s %12s %10s\n", "isa", "form", "us/token", "GFLOP/s");
    for (const auto isa : supported_isas()) {
        auto one = make_inputs(1);
        const unsigned long steps = 64;
        const double t1 = best_time(*reps,
                                    [&] {
                                        for (unsigned long i = 0; i < steps; ++i) {
                                            delta_net_recurrent(one.s, one.qk.data(), one.qk.data() + 16 * 128,
                                                                one.v.data(), one.g.data(), one.beta.data(),
                                                                one.state.data(), one.out.data(), 0, 32, isa);
                                        }
                                    }) /
                          static_cast<double>(steps);
        std::printf("%-8s %-24s %12.1f %10.1f\n", std::string(isa_name(isa)).c_str(), "decode (recurrent)", t1 * 1e6,
                    flop_per_token / t1 * 1e-9);
        auto many = make_inputs(*prefill);
        for (const std::size_t chunk : {std::size_t{0}, std::size_t{16}, std::size_t{32}, std::size_t{64}}) {
            const double t = best_time(*reps, [&] {
                std::fill(many.state.begin(), many.state.end(), 0.0f);
                if (chunk != 0) {
                    delta_net_chunked(many.s, many.qk.data(), many.qk.data() + 16 * 128, many.v.data(), many.g.data(),
                                      many.beta.data(), many.state.data(), many.out.data(), 0, 32, chunk, isa);
                } else {
                    delta_net_recurrent(many.s, many.qk.data(), many.qk.data() + 16 * 128, many.v.data(),
                                        many.g.data(), many.beta.data(), many.state.data(), many.out.data(), 0, 32, isa);
                }
            }) / static_cast<double>(*prefill);
            const std::string form = chunk == 0 ? "recurrent" : "chunked (" + std::to_string(chunk) + ")";
            std::printf("%-8s prefill %-16s %12.1f %10.1f\n", std::string(isa_name(isa)).c_str(), form.c_str(),
                        t * 1e6, flop_per_token / t * 1e-9);
        }
    }
    return 0;
}
