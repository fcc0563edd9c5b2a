// The gated delta rule: every ISA level's recurrent and chunked forms against a double-precision recurrence, the
// two forms against each other, state carried across calls, head ranges and the two key-head orders.
#include "kernels/delta_net.hpp"
#include "kernels/isa.hpp"
#include "kernels/linear_attention_ops.hpp"
#include "tests/kernels/test_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace sluice::kernels {
namespace {

/// Inputs of one call in the model's layout: q and k interleaved per token as in the convolution's output.
struct problem {
    delta_net_shape s;
    std::vector<float> qk;    ///< [token][q heads | k heads], L2-normalised per head
    std::vector<float> v;     ///< [token][n_heads * dv]
    std::vector<float> g;     ///< [token][n_heads], log decays in [-2, 0)
    std::vector<float> beta;  ///< [token][n_heads], in (0, 1)
    std::vector<float> state; ///< [n_heads][dk][dv], as a previous call may leave it

    const float* q() const { return qk.data(); }
    const float* k() const { return qk.data() + s.n_k_heads * s.dk; }
};

problem make_problem(std::mt19937& rng, std::size_t n_tokens, std::size_t n_heads, std::size_t n_k_heads,
                     std::size_t dk, std::size_t dv, delta_head_order order) {
    problem p;
    p.s.n_tokens = n_tokens;
    p.s.n_heads = n_heads;
    p.s.n_k_heads = n_k_heads;
    p.s.order = order;
    p.s.dk = dk;
    p.s.dv = dv;
    p.s.q_stride = p.s.k_stride = 2 * n_k_heads * dk;
    p.s.v_stride = p.s.out_stride = n_heads * dv;
    p.s.gate_stride = n_heads;
    p.s.q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
    p.qk = test::random_floats(rng, n_tokens * 2 * n_k_heads * dk);
    l2_norm_rows(p.qk.data(), n_tokens * 2 * n_k_heads, dk, dk, 1e-6f);
    p.v = test::random_floats(rng, n_tokens * n_heads * dv);
    std::uniform_real_distribution<float> decay(-2.0f, -0.01f), strength(0.05f, 0.95f);
    for (std::size_t i = 0; i < n_tokens * n_heads; ++i) {
        p.g.push_back(decay(rng));
        p.beta.push_back(strength(rng));
    }
    p.state = test::random_floats(rng, n_heads * dk * dv);
    for (auto& x : p.state) {
        x *= 0.3f;
    }
    return p;
}

/// The recurrence in double: outputs [token][n_heads * dv] and the final state.
void reference(const problem& p, std::vector<double>& out, std::vector<double>& state) {
    const auto& s = p.s;
    state.assign(p.state.begin(), p.state.end());
    out.assign(s.n_tokens * s.n_heads * s.dv, 0.0);
    const std::size_t r = s.n_heads / s.n_k_heads;
    for (std::size_t h = 0; h < s.n_heads; ++h) {
        const std::size_t kh = s.order == delta_head_order::tiled ? h % s.n_k_heads : h / r;
        double* st = state.data() + h * s.dk * s.dv;
        for (std::size_t t = 0; t < s.n_tokens; ++t) {
            const float* q = p.q() + t * s.q_stride + kh * s.dk;
            const float* k = p.k() + t * s.k_stride + kh * s.dk;
            const float* v = p.v.data() + t * s.v_stride + h * s.dv;
            const double decay = std::exp(double(p.g[t * s.n_heads + h])), b = p.beta[t * s.n_heads + h];
            for (std::size_t i = 0; i < s.dk * s.dv; ++i) {
                st[i] *= decay;
            }
            for (std::size_t j = 0; j < s.dv; ++j) {
                double kv = 0;
                for (std::size_t i = 0; i < s.dk; ++i) {
                    kv += st[i * s.dv + j] * k[i];
                }
                const double delta = b * (v[j] - kv);
                for (std::size_t i = 0; i < s.dk; ++i) {
                    st[i * s.dv + j] += k[i] * delta;
                }
            }
            for (std::size_t j = 0; j < s.dv; ++j) {
                double o = 0;
                for (std::size_t i = 0; i < s.dk; ++i) {
                    o += st[i * s.dv + j] * q[i] * double(s.q_scale);
                }
                out[t * s.out_stride + h * s.dv + j] = o;
            }
        }
    }
}

enum class form { recurrent, chunked };

void run(const problem& p, form f, std::size_t chunk, isa_level isa, std::vector<float>& out,
         std::vector<float>& state) {
    state = p.state;
    out.assign(p.s.n_tokens * p.s.out_stride, 0.0f);
    if (f == form::recurrent) {
        delta_net_recurrent(p.s, p.q(), p.k(), p.v.data(), p.g.data(), p.beta.data(), state.data(), out.data(), 0,
                            p.s.n_heads, isa);
    } else {
        delta_net_chunked(p.s, p.q(), p.k(), p.v.data(), p.g.data(), p.beta.data(), state.data(), out.data(), 0,
                          p.s.n_heads, chunk, isa);
    }
}

template <class A, class B>
void expect_close(const A& got, const B& want, double tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(double(got[i]), double(want[i]), tol * (1.0 + std::fabs(double(want[i])))) << what << " at " << i;
    }
}

struct geometry {
    std::size_t n_heads, n_k_heads, dk, dv;
};

// Small heads, value dimensions that leave SIMD tails, and the real model's 128 x 128 heads.
const geometry geometries[] = {{2, 2, 16, 16}, {4, 2, 24, 40}, {3, 1, 8, 70}, {4, 2, 128, 128}};

TEST(delta_net, both_forms_match_the_double_recurrence_at_every_isa) {
    std::mt19937 rng(31);
    for (const auto& geo : geometries) {
        for (std::size_t n_tokens : {1, 7, 70}) {
            const auto p =
                make_problem(rng, n_tokens, geo.n_heads, geo.n_k_heads, geo.dk, geo.dv, delta_head_order::grouped);
            std::vector<double> want_out, want_state;
            reference(p, want_out, want_state);
            for (const auto isa : supported_isas()) {
                for (const form f : {form::recurrent, form::chunked}) {
                    std::vector<float> out, state;
                    run(p, f, 16, isa, out, state);
                    const std::string what = std::string(isa_name(isa)) +
                                             (f == form::chunked ? " chunked" : " recurrent") + " dk " +
                                             std::to_string(geo.dk) + " dv " + std::to_string(geo.dv) + " tokens " +
                                             std::to_string(n_tokens);
                    expect_close(out, want_out, 2e-4, what + " out");
                    expect_close(state, want_state, 2e-4, what + " state");
                }
            }
        }
    }
}

TEST(delta_net, chunked_equals_recurrent_for_every_chunk_size) {
    std::mt19937 rng(32);
    const auto p = make_problem(rng, 130, 4, 2, 24, 40, delta_head_order::tiled);
    for (const auto isa : supported_isas()) {
        std::vector<float> want_out, want_state;
        run(p, form::recurrent, 0, isa, want_out, want_state);
        for (std::size_t chunk : {1, 2, 5, 16, 64, 200}) {
            std::vector<float> out, state;
            run(p, form::chunked, chunk, isa, out, state);
            const std::string what = std::string(isa_name(isa)) + " chunk " + std::to_string(chunk);
            expect_close(out, want_out, 1e-4, what + " out");
            expect_close(state, want_state, 1e-4, what + " state");
        }
    }
}

TEST(delta_net, state_carries_from_a_chunked_prefill_into_recurrent_decode) {
    std::mt19937 rng(33);
    const auto whole = make_problem(rng, 40, 4, 2, 32, 32, delta_head_order::grouped);
    std::vector<float> want_out, want_state;
    run(whole, form::recurrent, 0, active_isa(), want_out, want_state);
    // Prefill the first 29 tokens chunked, then one token at a time from the state it left.
    const std::size_t split = 29;
    auto state = whole.state;
    std::vector<float> out(whole.s.n_tokens * whole.s.out_stride);
    auto s = whole.s;
    s.n_tokens = split;
    delta_net_chunked(s, whole.q(), whole.k(), whole.v.data(), whole.g.data(), whole.beta.data(), state.data(),
                      out.data(), 0, s.n_heads, 8);
    s.n_tokens = 1;
    for (std::size_t t = split; t < whole.s.n_tokens; ++t) {
        delta_net_recurrent(s, whole.q() + t * s.q_stride, whole.k() + t * s.k_stride, whole.v.data() + t * s.v_stride,
                            whole.g.data() + t * s.gate_stride, whole.beta.data() + t * s.gate_stride, state.data(),
                            out.data() + t * s.out_stride, 0, s.n_heads);
    }
    expect_close(out, want_out, 1e-4, "out");
    expect_close(state, want_state, 1e-4, "state");
}

TEST(delta_net, head_ranges_compute_the_same_as_one_call) {
    std::mt19937 rng(34);
    const auto p = make_problem(rng, 9, 6, 3, 16, 24, delta_head_order::tiled);
    for (const auto isa : supported_isas()) {
        for (const form f : {form::recurrent, form::chunked}) {
            std::vector<float> want_out, want_state;
            run(p, f, 4, isa, want_out, want_state);
            auto state = p.state;
            std::vector<float> out(p.s.n_tokens * p.s.out_stride);
            for (auto [b, e] : {std::pair<std::size_t, std::size_t>{0, 2}, {2, 5}, {5, 6}}) {
                if (f == form::recurrent) {
                    delta_net_recurrent(p.s, p.q(), p.k(), p.v.data(), p.g.data(), p.beta.data(), state.data(),
                                        out.data(), b, e, isa);
                } else {
                    delta_net_chunked(p.s, p.q(), p.k(), p.v.data(), p.g.data(), p.beta.data(), state.data(),
                                      out.data(), b, e, 4, isa);
                }
            }
            EXPECT_EQ(out, want_out) << isa_name(isa);
            EXPECT_EQ(state, want_state) << isa_name(isa);
        }
    }
}

TEST(delta_net, tiled_order_of_reordered_value_heads_equals_grouped_order) {
    // What llama.cpp's qwen35 converter does to the value heads: grouped head (g, j) becomes tiled head j*nk + g.
    std::mt19937 rng(35);
    const std::size_t nk = 2, r = 3, nh = nk * r, dv = 8, dk = 8, n = 5;
    const auto grouped = make_problem(rng, n, nh, nk, dk, dv, delta_head_order::grouped);
    auto tiled = grouped;
    tiled.s.order = delta_head_order::tiled;
    const auto to_tiled = [&](std::size_t h) { return (h % r) * nk + h / r; };
    for (std::size_t h = 0; h < nh; ++h) {
        const std::size_t th = to_tiled(h);
        for (std::size_t t = 0; t < n; ++t) {
            for (std::size_t j = 0; j < dv; ++j) {
                tiled.v[t * nh * dv + th * dv + j] = grouped.v[t * nh * dv + h * dv + j];
            }
            tiled.g[t * nh + th] = grouped.g[t * nh + h];
            tiled.beta[t * nh + th] = grouped.beta[t * nh + h];
        }
        for (std::size_t i = 0; i < dk * dv; ++i) {
            tiled.state[th * dk * dv + i] = grouped.state[h * dk * dv + i];
        }
    }
    for (const auto isa : supported_isas()) {
        std::vector<float> go, gs, to, ts;
        run(grouped, form::recurrent, 0, isa, go, gs);
        run(tiled, form::recurrent, 0, isa, to, ts);
        for (std::size_t h = 0; h < nh; ++h) {
            for (std::size_t t = 0; t < n; ++t) {
                for (std::size_t j = 0; j < dv; ++j) {
                    ASSERT_EQ(to[t * nh * dv + to_tiled(h) * dv + j], go[t * nh * dv + h * dv + j]);
                }
            }
        }
    }
}

} // namespace
} // namespace sluice::kernels
