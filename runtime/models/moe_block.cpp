// The mixture-of-experts block: route, look the chosen experts up in the expert source (synchronously when it
// can; otherwise the runner awaits them and resumes here), run them and combine.
#include "runtime/models/blocks.hpp"

#include "kernels/ops.hpp"
#include "runtime/models/blocks_util.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::models {

using detail::matmul_share;
using detail::plan_input;
using detail::prepare_rows;
using runtime::slice;
using runtime::team_barrier;

namespace {

// The distinct experts chosen (into s.unique_ids, capacity reserved), and each selection's token and row.
void distinct_experts(forward_scratch& s, std::size_t n_tok, std::size_t k) {
    s.unique_ids.assign(s.ids.begin(), s.ids.begin() + static_cast<std::ptrdiff_t>(n_tok * k));
    std::sort(s.unique_ids.begin(), s.unique_ids.end());
    s.unique_ids.erase(std::unique(s.unique_ids.begin(), s.unique_ids.end()), s.unique_ids.end());
    for (std::size_t sel = 0; sel < n_tok * k; ++sel) {
        s.sel_token[sel] = static_cast<std::int32_t>(sel / k);
        s.sel_row[sel] = static_cast<std::int32_t>(sel);
    }
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

namespace {

// Norm, router logits and the top-k choice of every token, then the expert lookup (member 0).
void route(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t n_embd = hp.n_embd;
    const std::size_t k = hp.n_expert_used;
    const slice tok(n_tok, m.index, m.count);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::rms_norm(s.x.data() + i * n_embd, l.ffn_norm.f32(), s.xn.data() + i * n_embd, n_embd, hp.rms_eps);
    }
    prepare_rows(in, s.xn.data(), tok);
    m.sync();
    matmul_share(l.router, in, n_tok, s.router.data(), hp.n_expert, m.index, m.count);
    m.sync();
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::route_top_k(s.router.data() + i * hp.n_expert, hp.n_expert, k, kernels::router_scoring::softmax,
                             nullptr, hp.expert_weights_norm, s.ids.data() + i * k, s.weights.data() + i * k);
    }
    m.sync();
    if (m.index == 0) {
        distinct_experts(s, n_tok, k);
        ctx.experts_pending = !ctx.experts().try_acquire(il, s.unique_ids, s.experts);
    }
    m.sync();
}

// Each selection's expert output into moe_out, and the shared expert's into tmp.
void run_experts(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t n_sel = n_tok * hp.n_expert_used;
    const std::size_t ff = hp.n_ff_exp;
    const bool shared = hp.shared_expert;
    const std::size_t t = m.index, n = m.count;
    const auto hidden_in = plan_input(s, 4, {l.down_exps.type}, ff, n_sel);
    const auto sh_hidden_in = shared ? plan_input(s, 5, {l.shexp_down.type}, hp.n_ff_shexp, n_tok) : hidden_in;
    experts_share(l.gate_exps, s.experts.gate, in.get(l.gate_exps.type), s.ids.data(), s.sel_token.data(), n_sel,
                  s.gate.data(), t, n);
    experts_share(l.up_exps, s.experts.up, in.get(l.up_exps.type), s.ids.data(), s.sel_token.data(), n_sel, s.up.data(),
                  t, n);
    if (shared) {
        matmul_share(l.shexp_gate, in, n_tok, s.sh_gate.data(), hp.n_ff_shexp, t, n);
        matmul_share(l.shexp_up, in, n_tok, s.sh_up.data(), hp.n_ff_shexp, t, n);
    }
    m.sync();
    const slice sel(n_sel, t, n);
    if (sel.size()) {
        kernels::swiglu(s.gate.data() + sel.begin * ff, s.up.data() + sel.begin * ff, s.gate.data() + sel.begin * ff,
                        sel.size() * ff);
    }
    prepare_rows(hidden_in, s.gate.data(), sel);
    const slice tok(n_tok, t, n);
    if (shared && tok.size()) {
        const std::size_t w = hp.n_ff_shexp;
        kernels::swiglu(s.sh_gate.data() + tok.begin * w, s.sh_up.data() + tok.begin * w,
                        s.sh_gate.data() + tok.begin * w, tok.size() * w);
        prepare_rows(sh_hidden_in, s.sh_gate.data(), tok);
    }
    m.sync();
    experts_share(l.down_exps, s.experts.down, hidden_in.get(l.down_exps.type), s.ids.data(), s.sel_row.data(), n_sel,
                  s.moe_out.data(), t, n);
    if (shared) {
        matmul_share(l.shexp_down, sh_hidden_in, n_tok, s.tmp.data(), hp.n_embd, t, n);
    }
    m.sync();
}

// x += sum of the chosen experts' outputs by weight (+ the gated shared expert), for member m's tokens.
void combine(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_embd = hp.n_embd;
    const std::size_t k = hp.n_expert_used;
    const slice tok(ctx.n_tokens, m.index, m.count);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        float* x = s.x.data() + i * n_embd;
        for (std::size_t j = 0; j < k; ++j) {
            const float w = s.weights[i * k + j];
            const float* e = s.moe_out.data() + (i * k + j) * n_embd;
            for (std::size_t c = 0; c < n_embd; ++c) {
                x[c] += w * e[c];
            }
        }
        if (hp.shared_expert) {
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
}

} // namespace

bool moe_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const auto in = hp.shared_expert
                        ? plan_input(s, 0, {l.router.type, l.gate_exps.type, l.up_exps.type, l.shexp_gate.type},
                                     hp.n_embd, ctx.n_tokens)
                        : plan_input(s, 0, {l.router.type, l.gate_exps.type, l.up_exps.type}, hp.n_embd, ctx.n_tokens);
    if (ctx.resume_layer != il) {
        route(ctx, il, in, m);
        if (ctx.experts_pending) {
            return false;
        }
    }
    run_experts(ctx, il, in, m);
    combine(ctx, il, m);
    m.sync();
    if (m.index == 0) {
        ctx.experts().release(il);
        ctx.resume_layer = layer_context::no_layer;
    }
    m.sync();
    return true;
}

} // namespace sluice::models
