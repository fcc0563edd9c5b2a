// The mixture-of-experts block: route, pin the chosen experts the expert source can serve now and ask it for the
// rest (with a prediction of the next layer's choice, so their reads overlap this layer's compute), run the
// pinned experts in chunks while the others are read, and leave the team job when some must be awaited; the
// runner awaits them and resumes here. Combine once every chosen expert has run.
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

namespace {

// The distinct experts chosen (sorted, into s.unique_ids, all wanted), and each selection's token and row.
void distinct_experts(forward_scratch& s, std::size_t n_tok, std::size_t k) {
    s.unique_ids.assign(s.ids.begin(), s.ids.begin() + static_cast<std::ptrdiff_t>(n_tok * k));
    std::sort(s.unique_ids.begin(), s.unique_ids.end());
    s.unique_ids.erase(std::unique(s.unique_ids.begin(), s.unique_ids.end()), s.unique_ids.end());
    s.expert_states.assign(s.unique_ids.size(), expert_state::wanted);
    for (std::size_t i = 0; i < s.unique_ids.size(); ++i) {
        s.unique_index[static_cast<std::size_t>(s.unique_ids[i])] = static_cast<std::int32_t>(i);
    }
    for (std::size_t sel = 0; sel < n_tok * k; ++sel) {
        s.sel_token[sel] = static_cast<std::int32_t>(sel / k);
        s.sel_row[sel] = static_cast<std::int32_t>(sel);
    }
}

// Where one choice of experts goes: the normalised input, the router logits, and each token's top-k.
struct choice_buffers {
    float* xn;
    float* logits;
    std::int32_t* ids;
    float* weights;
};

// Layer `il`'s router choice for every token of the batch's residual stream x: its norm into xn, prepared as
// `in`, its router logits, then the top-k of each token.
void choose_experts(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, choice_buffers out,
                    const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_embd = hp.n_embd;
    const std::size_t k = hp.n_expert_used;
    const slice tok(ctx.n_tokens, m.index, m.count);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::rms_norm(s.x.data() + i * n_embd, l.ffn_norm.f32(), out.xn + i * n_embd, n_embd, hp.rms_eps);
    }
    prepare_rows(in, out.xn, tok);
    m.sync();
    matmul_share(l.router, in, ctx.n_tokens, out.logits, hp.n_expert, m.index, m.count);
    m.sync();
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::route_top_k(out.logits + i * hp.n_expert, hp.n_expert, k, kernels::router_scoring::softmax, nullptr,
                             hp.expert_weights_norm, out.ids + i * k, out.weights + i * k);
    }
    m.sync(); // every token's choice is written before anyone reads them all
}

// The next MoE layer's predicted choice: its router applied to this layer's residual stream (normalised with
// its own norm), the distinct top-k of all tokens into s.pred_unique. Empty when there is no next MoE layer.
void predict_next(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    const std::uint32_t next = il + 1;
    const bool predict = ctx.experts().wants_prediction() && next < hp.n_layer && ctx.layer(next).router;
    if (!predict) {
        if (m.index == 0) {
            s.pred_unique.clear();
        }
        return;
    }
    const auto in = plan_input(s, 6, {ctx.layer(next).router.type}, hp.n_embd, ctx.n_tokens);
    choose_experts(ctx, next, in, {s.pred_xn.data(), s.pred_router.data(), s.pred_ids.data(), s.pred_weights.data()},
                   m);
    if (m.index == 0) {
        const auto n_sel = static_cast<std::ptrdiff_t>(std::size_t{ctx.n_tokens} * hp.n_expert_used);
        s.pred_unique.assign(s.pred_ids.begin(), s.pred_ids.begin() + n_sel);
        std::sort(s.pred_unique.begin(), s.pred_unique.end());
        s.pred_unique.erase(std::unique(s.pred_unique.begin(), s.pred_unique.end()), s.pred_unique.end());
    }
}

// The choice of every token, the next layer's prediction, then (member 0) pin what is usable and request the
// rest.
void route(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    choose_experts(ctx, il, in, {s.xn.data(), s.router.data(), s.ids.data(), s.weights.data()}, m);
    predict_next(ctx, il, m);
    if (m.index == 0) {
        distinct_experts(s, ctx.n_tokens, hp.n_expert_used);
        auto& src = ctx.experts();
        const std::size_t pinned = src.try_pin(il, s.unique_ids, s.expert_states, s.experts);
        if (pinned < s.unique_ids.size() || !s.pred_unique.empty()) {
            src.request(il, s.unique_ids, s.expert_states, il + 1, s.pred_unique);
        }
    }
    m.sync();
}

// The shared expert's output into tmp (resident weights: computed while routed experts may still be read).
void shared_expert(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t w = hp.n_ff_shexp;
    const auto hidden_in = plan_input(s, 5, {l.shexp_down.type}, w, n_tok);
    matmul_share(l.shexp_gate, in, n_tok, s.sh_gate.data(), w, m.index, m.count);
    matmul_share(l.shexp_up, in, n_tok, s.sh_up.data(), w, m.index, m.count);
    m.sync();
    const slice tok(n_tok, m.index, m.count);
    if (tok.size()) {
        kernels::swiglu(s.sh_gate.data() + tok.begin * w, s.sh_up.data() + tok.begin * w,
                        s.sh_gate.data() + tok.begin * w, tok.size() * w);
        prepare_rows(hidden_in, s.sh_gate.data(), tok);
    }
    m.sync();
    matmul_share(l.shexp_down, hidden_in, n_tok, s.tmp.data(), hp.n_embd, m.index, m.count);
    m.sync();
}

// Member 0: the selections whose expert is pinned, in selection order, into the chunk arrays.
void build_chunk(layer_context& ctx) {
    auto& s = ctx.scratch();
    const std::size_t n_sel = std::size_t{ctx.n_tokens} * ctx.hparams().n_expert_used;
    std::uint32_t n = 0;
    for (std::size_t sel = 0; sel < n_sel; ++sel) {
        const auto u = static_cast<std::size_t>(s.unique_index[static_cast<std::size_t>(s.ids[sel])]);
        if (s.expert_states[u] == expert_state::pinned) {
            s.chunk_expert[n] = s.ids[sel];
            s.chunk_token[n] = s.sel_token[sel];
            s.chunk_row[n] = static_cast<std::int32_t>(sel);
            ++n;
        }
    }
    ctx.chunk_size = n;
}

// Member t's share of matmul_experts over the chunk's selections.
void experts_share(const weight_view& w, const std::vector<const void*>& ptrs, const std::byte* act,
                   const std::int32_t* chunk_token, const forward_scratch& s, std::size_t n_chunk, float* y,
                   std::size_t t, std::size_t n) {
    const slice rows(w.rows, t, n);
    if (rows.size()) {
        kernels::matmul_experts(w.type, ptrs.data(), w.row_bytes, rows.begin, rows.end, w.cols, act,
                                s.chunk_expert.data(), chunk_token, n_chunk, y, w.rows, s.chunk_row.data());
    }
}

// The chunk's expert outputs into their rows of moe_out.
void run_chunk(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_chunk = ctx.chunk_size;
    const std::size_t n_sel = std::size_t{ctx.n_tokens} * hp.n_expert_used;
    const std::size_t ff = hp.n_ff_exp;
    const std::size_t t = m.index, n = m.count;
    const auto hidden_in = plan_input(s, 4, {l.down_exps.type}, ff, n_sel);
    experts_share(l.gate_exps, s.experts.gate, in.get(l.gate_exps.type), s.chunk_token.data(), s, n_chunk,
                  s.gate.data(), t, n);
    experts_share(l.up_exps, s.experts.up, in.get(l.up_exps.type), s.chunk_token.data(), s, n_chunk, s.up.data(), t,
                  n);
    m.sync();
    const slice part(n_chunk, t, n);
    for (std::size_t c = part.begin; c < part.end; ++c) {
        const auto row = static_cast<std::size_t>(s.chunk_row[c]);
        float* g = s.gate.data() + row * ff;
        kernels::swiglu(g, s.up.data() + row * ff, g, ff);
        prepare_rows(hidden_in, s.gate.data(), slice(n_sel, row, n_sel)); // exactly row `row`
    }
    m.sync();
    // The down projection reads each selection's own hidden row.
    experts_share(l.down_exps, s.experts.down, hidden_in.get(l.down_exps.type), s.chunk_row.data(), s, n_chunk,
                  s.moe_out.data(), t, n);
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
        if (hp.shared_expert) {
            shared_expert(ctx, il, in, m);
        }
    }
    // Chunks of pinned experts until none is left; experts arriving meanwhile join the next chunk.
    while (true) {
        if (m.index == 0) {
            build_chunk(ctx);
        }
        m.sync();
        if (ctx.chunk_size == 0) {
            break;
        }
        run_chunk(ctx, il, in, m);
        if (m.index == 0) {
            ctx.experts().release(il, s.unique_ids, s.expert_states);
            ctx.experts().try_pin(il, s.unique_ids, s.expert_states, s.experts);
        }
    }
    if (m.index == 0) {
        ctx.experts_pending = std::any_of(s.expert_states.begin(), s.expert_states.end(),
                                          [](expert_state st) { return st == expert_state::wanted; });
    }
    m.sync();
    if (ctx.experts_pending) {
        return false;
    }
    combine(ctx, il, m);
    m.sync();
    if (m.index == 0) {
        ctx.resume_layer = layer_context::no_layer;
    }
    m.sync();
    return true;
}

} // namespace sluice::models
