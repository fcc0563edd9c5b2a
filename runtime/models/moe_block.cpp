// The mixture-of-experts block: route (team job 1), acquire the chosen experts from the expert source
// (awaited, so a streaming cache can read them), run them and combine (team job 2).
#include "runtime/models/blocks.hpp"

#include "kernels/ops.hpp"
#include "runtime/models/blocks_util.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::models {

using detail::matmul_share;
using detail::plan_input;
using detail::prepare_rows;
using runtime::run_team;
using runtime::slice;
using runtime::team_barrier;

namespace {

// Selections routed to distinct experts; fills sel_token with the token of each selection.
std::vector<std::int32_t> distinct_experts(forward_scratch& s, std::size_t n_tok, std::size_t k) {
    std::vector<std::int32_t> unique(s.ids.begin(), s.ids.begin() + static_cast<std::ptrdiff_t>(n_tok * k));
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    for (std::size_t sel = 0; sel < n_tok * k; ++sel) {
        s.sel_token[sel] = static_cast<std::int32_t>(sel / k);
        s.sel_row[sel] = static_cast<std::int32_t>(sel);
    }
    return unique;
}

// Member t's share of matmul_experts over all selections.
void experts_share(const weight_view& w, const std::vector<const void*>& ptrs, const std::byte* act,
                   const std::int32_t* sel_expert, const std::int32_t* sel_token, std::size_t n_sel, float* y,
                   std::size_t t, std::size_t n) {
    const slice rows(w.rows, t, n);
    if (rows.size()) {
        kernels::matmul_experts(w.type, ptrs.data(), w.row_bytes, rows.begin, rows.end, w.cols, act, sel_expert,
                                sel_token, n_sel, y, w.rows);
    }
}

} // namespace

boost::asio::awaitable<result<void>> moe_block(layer_context& ctx, std::uint32_t il) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t n_embd = hp.n_embd;
    const std::size_t k = hp.n_expert_used;
    const std::size_t n_sel = n_tok * k;
    const std::size_t ff = hp.n_ff_exp;
    const bool shared = hp.shared_expert;
    const auto in =
        shared ? plan_input(s, 0, {l.router.type, l.gate_exps.type, l.up_exps.type, l.shexp_gate.type}, n_embd, n_tok)
               : plan_input(s, 0, {l.router.type, l.gate_exps.type, l.up_exps.type}, n_embd, n_tok);

    // Step 1: norm, router logits, top-k per token.
    co_await run_team(ctx.pool(), [&](std::size_t t, std::size_t n, team_barrier& b) {
        const slice tok(n_tok, t, n);
        for (std::size_t i = tok.begin; i < tok.end; ++i) {
            kernels::rms_norm(s.x.data() + i * n_embd, l.ffn_norm.f32(), s.xn.data() + i * n_embd, n_embd, hp.rms_eps);
        }
        prepare_rows(in, s.xn.data(), tok);
        b.wait();
        matmul_share(l.router, in, n_tok, s.router.data(), hp.n_expert, t, n);
        b.wait();
        for (std::size_t i = tok.begin; i < tok.end; ++i) {
            kernels::route_top_k(s.router.data() + i * hp.n_expert, hp.n_expert, k, kernels::router_scoring::softmax,
                                 nullptr, hp.expert_weights_norm, s.ids.data() + i * k, s.weights.data() + i * k);
        }
    });

    // Step 2: the chosen experts' weights.
    const auto unique = distinct_experts(s, n_tok, k);
    if (auto r = co_await ctx.experts().acquire(il, unique, s.experts); !r) {
        co_return r.error().with_context("layer " + std::to_string(il) + " experts");
    }

    // Step 3: experts (and the shared expert), combined into the residual stream.
    const auto hidden_in = plan_input(s, 4, {l.down_exps.type}, ff, n_sel);
    const auto sh_hidden_in = shared ? plan_input(s, 5, {l.shexp_down.type}, hp.n_ff_shexp, n_tok) : hidden_in;
    co_await run_team(ctx.pool(), [&](std::size_t t, std::size_t n, team_barrier& b) {
        experts_share(l.gate_exps, s.experts.gate, in.get(l.gate_exps.type), s.ids.data(), s.sel_token.data(), n_sel,
                      s.gate.data(), t, n);
        experts_share(l.up_exps, s.experts.up, in.get(l.up_exps.type), s.ids.data(), s.sel_token.data(), n_sel,
                      s.up.data(), t, n);
        if (shared) {
            matmul_share(l.shexp_gate, in, n_tok, s.sh_gate.data(), hp.n_ff_shexp, t, n);
            matmul_share(l.shexp_up, in, n_tok, s.sh_up.data(), hp.n_ff_shexp, t, n);
        }
        b.wait();
        const slice sel(n_sel, t, n);
        if (sel.size()) {
            kernels::swiglu(s.gate.data() + sel.begin * ff, s.up.data() + sel.begin * ff,
                            s.gate.data() + sel.begin * ff, sel.size() * ff);
        }
        prepare_rows(hidden_in, s.gate.data(), sel);
        const slice tok(n_tok, t, n);
        if (shared && tok.size()) {
            const std::size_t w = hp.n_ff_shexp;
            kernels::swiglu(s.sh_gate.data() + tok.begin * w, s.sh_up.data() + tok.begin * w,
                            s.sh_gate.data() + tok.begin * w, tok.size() * w);
            prepare_rows(sh_hidden_in, s.sh_gate.data(), tok);
        }
        b.wait();
        experts_share(l.down_exps, s.experts.down, hidden_in.get(l.down_exps.type), s.ids.data(), s.sel_row.data(),
                      n_sel, s.moe_out.data(), t, n);
        if (shared) {
            matmul_share(l.shexp_down, sh_hidden_in, n_tok, s.tmp.data(), n_embd, t, n);
        }
        b.wait();
        for (std::size_t i = tok.begin; i < tok.end; ++i) {
            float* x = s.x.data() + i * n_embd;
            for (std::size_t j = 0; j < k; ++j) {
                const float w = s.weights[i * k + j];
                const float* e = s.moe_out.data() + (i * k + j) * n_embd;
                for (std::size_t c = 0; c < n_embd; ++c) {
                    x[c] += w * e[c];
                }
            }
            if (shared) {
                float g = 0.0f;
                for (std::size_t c = 0; c < n_embd; ++c) {
                    g += s.xn[i * n_embd + c] * l.shexp_gate_inp.f32()[c];
                }
                g = 1.0f / (1.0f + std::exp(-g));
                for (std::size_t c = 0; c < n_embd; ++c) {
                    x[c] += g * s.tmp[i * n_embd + c];
                }
            }
        }
    });
    ctx.experts().release(il);
    co_return result<void>{};
}

} // namespace sluice::models
