// The mixture-of-experts block: route, fetch the chosen experts from the expert source (ready at once when in
// memory, else as their reads end) and prefetch the next layer's predicted ones behind it (and, at prediction
// depth 2, the layer after's in a second batch behind those), so their reads overlap this layer's compute; run the
// ready experts in chunks while the others are read, and stall on the fetch when only waiting ones are left: the runner
// awaits it and resumes here (moe_resume). Combine once every chosen expert has run.
#include "runtime/models/blocks.hpp"

#include "kernels/ops.hpp"
#include "runtime/experts/prediction_votes.hpp"
#include "runtime/experts/routing_log.hpp"
#include "runtime/models/blocks_util.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::models {

using detail::matmul_share;
using detail::plan_input;
using detail::prepare_rows;
using runtime::slice;

namespace {

// The distinct experts chosen (sorted, into moe.unique_ids), and each selection's token.
void distinct_experts(forward_scratch& s, std::size_t n_tok, std::size_t k) {
    auto& moe = s.moe;
    moe.unique_ids.assign(s.ids.begin(), s.ids.begin() + static_cast<std::ptrdiff_t>(n_tok * k));
    std::sort(moe.unique_ids.begin(), moe.unique_ids.end());
    moe.unique_ids.erase(std::unique(moe.unique_ids.begin(), moe.unique_ids.end()), moe.unique_ids.end());
    for (std::size_t i = 0; i < moe.unique_ids.size(); ++i) {
        moe.unique_index[static_cast<std::size_t>(moe.unique_ids[i])] = static_cast<std::int32_t>(i);
        moe.in_chunk[i] = 0;
    }
    for (std::size_t sel = 0; sel < n_tok * k; ++sel) {
        s.sel_token[sel] = static_cast<std::int32_t>(sel / k);
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
        kernels::rms_norm(s.x.data() + i * n_embd, l.ffn_input_norm().f32(), out.xn + i * n_embd, n_embd, hp.rms_eps);
    }
    prepare_rows(in, out.xn, tok);
    m.sync();
    matmul_share(l.router, in, ctx.n_tokens, out.logits, hp.n_expert, m.index, m.count);
    m.sync();
    kernels::route_params route;
    route.scoring = hp.gpt_oss.softmax_of_chosen ? kernels::router_scoring::softmax_of_chosen : hp.routing.scoring;
    route.selection_bias = l.exp_probs_b ? l.exp_probs_b.f32() : nullptr;
    route.renormalize = hp.expert_weights_norm;
    route.n_groups = hp.routing.n_groups;
    route.groups_used = hp.routing.groups_used;
    route.scale = hp.routing.weights_scale;
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        float* logits = out.logits + i * hp.n_expert;
        if (l.router_bias) {
            for (std::size_t e = 0; e < hp.n_expert; ++e) {
                logits[e] += l.router_bias.f32()[e];
            }
        }
        kernels::route_top_k(logits, hp.n_expert, k, route, out.ids + i * k, out.weights + i * k);
    }
    m.sync(); // every token's choice is written before anyone reads them all
}

// The predicted choice of MoE layer il + ahead: its router applied to layer il's residual stream (normalised
// with layer il + ahead's own norm), each token's top-k into `ids`. Whether there is one: such a MoE layer, and
// a source that prefetches that far ahead or a routing log (which records depth 1 and 2).
bool predict_ahead(layer_context& ctx, std::uint32_t il, std::uint32_t ahead, std::int32_t* ids, const team_member& m) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    const std::uint32_t target = il + ahead;
    const bool wanted = ctx.experts().prediction_depth() >= ahead || ctx.routing != nullptr;
    if (!wanted || target >= hp.n_layer || !ctx.layer(target).router) {
        return false;
    }
    const auto in = plan_input(s.prediction_in, {ctx.layer(target).router.type}, hp.n_embd, ctx.n_tokens);
    choose_experts(ctx, target, in, {s.pred_xn.data(), s.pred_router.data(), ids, s.pred_weights.data()}, m);
    return true;
}

// Member 0: the distinct predicted experts of `pred` ([token][k]) into `unique` (entries below 0 are no
// prediction). Over `limit` (0: none), only the `limit` experts most tokens predicted are kept, so that a step of
// many sequences does not prefetch nearly every expert of the next layer.
void distinct_predicted(forward_scratch& s, const std::vector<std::int32_t>& pred, std::vector<std::int32_t>& unique,
                        std::size_t n_tok, std::size_t k, std::size_t limit) {
    unique.clear();
    for (std::size_t sel = 0; sel < n_tok * k; ++sel) {
        if (pred[sel] >= 0) {
            unique.push_back(pred[sel]);
        }
    }
    std::sort(unique.begin(), unique.end());
    experts::keep_most_voted(unique, limit, s.pred_votes);
}

// Member 0: each row's chosen experts into its sequence's cache, for the caches that keep routing.
void keep_routing(layer_context& ctx, std::uint32_t il) {
    const auto& s = ctx.scratch();
    const std::size_t k = ctx.hparams().n_expert_used;
    for (const auto& seg : ctx.segments) {
        if (!seg.cache->keeps_routing()) {
            continue;
        }
        for (std::uint32_t r = 0; r < seg.n_tokens; ++r) {
            const auto* ids = s.ids.data() + (std::size_t{seg.row} + r) * k;
            auto* out = seg.cache->routing_row(std::size_t{seg.first_pos} + r) + std::size_t{il} * k;
            for (std::size_t j = 0; j < k; ++j) {
                out[j] = static_cast<std::int16_t>(ids[j]);
            }
        }
    }
}

// The choice of every token and the predictions one and two layers ahead; then member 0 fetches the chosen
// experts and replaces the prediction of this layer (now chosen, or not) with that of the next: the next
// layer's reads queue behind this layer's, and at depth 2 the reads of the layer after queue behind those, in
// a second batch of at most top_k experts (the most predicted), so they never run ahead of nearer needs.
void route(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    choose_experts(ctx, il, in, {s.xn.data(), s.router.data(), s.ids.data(), s.weights.data()}, m);
    bool predicted = predict_ahead(ctx, il, 1, s.pred_ids.data(), m);
    bool predicted2 = predict_ahead(ctx, il, 2, s.pred2_ids.data(), m);
    if (m.index == 0) {
        const std::size_t n_sel = std::size_t{ctx.n_tokens} * hp.n_expert_used;
        if (ctx.routing != nullptr) { // recorded as chosen, or replaced by a recording's choice
            ctx.routing->log->on_layer(*ctx.routing, il, {s.ids.data(), n_sel}, {s.weights.data(), n_sel},
                                       {s.pred_ids.data(), n_sel}, predicted, {s.pred2_ids.data(), n_sel}, predicted2);
        }
        keep_routing(ctx, il);
        distinct_experts(s, ctx.n_tokens, hp.n_expert_used);
        auto& src = ctx.experts();
        const std::uint32_t depth = src.prediction_depth();
        s.pred_unique.clear();
        s.pred2_unique.clear();
        if (predicted && depth >= 1) {
            distinct_predicted(s, s.pred_ids, s.pred_unique, ctx.n_tokens, hp.n_expert_used, ctx.prediction_limit);
        }
        if (predicted2 && depth >= 2) {
            distinct_predicted(s, s.pred2_ids, s.pred2_unique, ctx.n_tokens, hp.n_expert_used, hp.n_expert_used);
        }
        src.fetch(s.moe.fetch, il, s.moe.unique_ids);
        src.retire(s.moe.prediction); // its layer came: what it still holds unread may go
        if (!s.pred_unique.empty()) {
            src.prefetch(s.moe.prediction, il + 1, s.pred_unique);
        }
        src.retire(s.moe.prediction2); // replaced by the nearer prediction for the same layer, just made
        if (!s.pred2_unique.empty()) {
            src.prefetch_ahead(s.moe.prediction2, il + 2, s.pred2_unique, 2);
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
    const auto hidden_in = plan_input(s.shared_in, {l.shexp_down.type}, w, n_tok);
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

// Member 0: the selections whose expert is ready and not computed yet, in selection order, into the chunk
// arrays, with their experts' part pointers; whether chosen experts are still being read.
void build_chunk(layer_context& ctx) {
    auto& s = ctx.scratch();
    auto& moe = s.moe;
    const auto& batch = moe.fetch;
    bool waiting = false;
    for (std::size_t u = 0; u < batch.size(); ++u) {
        const auto st = batch.state(u);
        moe.in_chunk[u] = st == experts::entry_state::ready;
        waiting = waiting || st == experts::entry_state::waiting || st == experts::entry_state::failed;
        if (moe.in_chunk[u]) {
            const auto e = static_cast<std::size_t>(batch.expert(u));
            for (std::size_t p = 0; p < experts::max_expert_parts; ++p) {
                moe.parts[p][e] = batch.part(u, static_cast<experts::expert_part>(p));
            }
        }
    }
    const std::size_t n_sel = std::size_t{ctx.n_tokens} * ctx.hparams().n_expert_used;
    std::uint32_t n = 0;
    for (std::size_t sel = 0; sel < n_sel; ++sel) {
        const auto u = static_cast<std::size_t>(moe.unique_index[static_cast<std::size_t>(s.ids[sel])]);
        if (moe.in_chunk[u]) {
            moe.chunk_expert[n] = s.ids[sel];
            moe.chunk_token[n] = s.sel_token[sel];
            moe.chunk_row[n] = static_cast<std::int32_t>(sel);
            ++n;
        }
    }
    moe.chunk_size = n;
    moe.waiting = waiting;
}

// Member 0: hands the chunk's experts back to the source.
void release_chunk(layer_context& ctx) {
    auto& moe = ctx.scratch().moe;
    for (std::size_t u = 0; u < moe.fetch.size(); ++u) {
        if (moe.in_chunk[u]) {
            ctx.experts().release(moe.fetch, u);
            moe.in_chunk[u] = 0;
        }
    }
}

// Member t's share of matmul_experts over the chunk's selections.
void experts_share(const weight_view& w, const std::vector<const void*>& ptrs, const std::byte* act,
                   const std::int32_t* chunk_token, const forward_scratch::moe_step& moe, std::size_t n_chunk,
                   float* y, std::size_t t, std::size_t n) {
    const slice rows(w.rows, t, n);
    if (rows.size()) {
        kernels::matmul_experts(w.type, w.layout, ptrs.data(), w.row_bytes, rows.begin, rows.end, w.cols, act,
                                moe.chunk_expert.data(), chunk_token, n_chunk, y, w.rows, moe.chunk_row.data());
    }
}

// One selection's hidden row from its gate and up rows: the expert's biases when it has them, then SwiGLU (or
// gpt-oss's clamped variant).
void expert_hidden(const model_hparams& hp, const forward_scratch::moe_step& moe, std::size_t e, float* g, float* u) {
    const std::size_t ff = hp.n_ff_exp;
    constexpr auto gate_bias = static_cast<std::size_t>(experts::expert_part::gate_bias);
    constexpr auto up_bias = static_cast<std::size_t>(experts::expert_part::up_bias);
    if (const auto* b = static_cast<const float*>(moe.parts[gate_bias][e])) {
        for (std::size_t j = 0; j < ff; ++j) {
            g[j] += b[j];
        }
    }
    if (const auto* b = static_cast<const float*>(moe.parts[up_bias][e])) {
        for (std::size_t j = 0; j < ff; ++j) {
            u[j] += b[j];
        }
    }
    if (hp.gpt_oss.swiglu_limit > 0.0f) {
        kernels::swiglu_clamped(g, u, g, ff, hp.gpt_oss.swiglu_alpha, hp.gpt_oss.swiglu_limit);
    } else {
        kernels::swiglu(g, u, g, ff);
    }
}

// Member t's rows [rows of its down-projection share] of each chunk selection's output get the expert's down
// bias (the rows it just wrote, so no barrier is needed).
void add_down_bias(const weight_view& down, const forward_scratch::moe_step& moe, std::size_t n_chunk, float* y,
                   std::size_t t, std::size_t n) {
    constexpr auto down_bias = static_cast<std::size_t>(experts::expert_part::down_bias);
    const slice rows(down.rows, t, n);
    for (std::size_t c = 0; c < n_chunk; ++c) {
        const auto* b = static_cast<const float*>(moe.parts[down_bias][static_cast<std::size_t>(moe.chunk_expert[c])]);
        if (b == nullptr) {
            return; // a model has biases on every expert or on none
        }
        float* out = y + static_cast<std::size_t>(moe.chunk_row[c]) * down.rows;
        for (std::size_t j = rows.begin; j < rows.end; ++j) {
            out[j] += b[j];
        }
    }
}

// The chunk's expert outputs into their rows of moe_out.
void run_chunk(layer_context& ctx, std::uint32_t il, const detail::prepared_input& in, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    auto& moe = s.moe;
    const std::size_t n_chunk = moe.chunk_size;
    const std::size_t n_sel = std::size_t{ctx.n_tokens} * hp.n_expert_used;
    const std::size_t ff = hp.n_ff_exp;
    const std::size_t t = m.index, n = m.count;
    const auto& parts = moe.parts;
    constexpr auto gate = static_cast<std::size_t>(experts::expert_part::gate);
    constexpr auto up = static_cast<std::size_t>(experts::expert_part::up);
    constexpr auto down = static_cast<std::size_t>(experts::expert_part::down);
    const auto hidden_in = plan_input(s.wide_in, {l.down_exps.type}, ff, n_sel);
    experts_share(l.gate_exps, parts[gate], in.get(l.gate_exps.type), moe.chunk_token.data(), moe, n_chunk,
                  s.gate.data(), t, n);
    experts_share(l.up_exps, parts[up], in.get(l.up_exps.type), moe.chunk_token.data(), moe, n_chunk, s.up.data(),
                  t, n);
    m.sync();
    const slice part(n_chunk, t, n);
    for (std::size_t c = part.begin; c < part.end; ++c) {
        const auto row = static_cast<std::size_t>(moe.chunk_row[c]);
        expert_hidden(hp, moe, static_cast<std::size_t>(moe.chunk_expert[c]), s.gate.data() + row * ff,
                      s.up.data() + row * ff);
        prepare_rows(hidden_in, s.gate.data(), slice(n_sel, row, n_sel)); // exactly row `row`
    }
    m.sync();
    // The down projection reads each selection's own hidden row.
    experts_share(l.down_exps, parts[down], hidden_in.get(l.down_exps.type), moe.chunk_row.data(), moe, n_chunk,
                  s.moe_out.data(), t, n);
    add_down_bias(l.down_exps, moe, n_chunk, s.moe_out.data(), t, n);
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
            float g = 1.0f; // ungated (deepseek2, glm4moe) unless the model has the sigmoid gate
            if (l.shexp_gate_inp) {
                g = 0.0f;
                for (std::size_t c = 0; c < n_embd; ++c) {
                    g += s.xn[i * n_embd + c] * l.shexp_gate_inp.f32()[c];
                }
                g = 1.0f / (1.0f + std::exp(-g));
            }
            for (std::size_t c = 0; c < n_embd; ++c) {
                x[c] += g * s.tmp[i * n_embd + c];
            }
        }
    }
}

} // namespace

namespace {

// The block's input, prepared for the router, the experts' gate/up and the shared expert (the same buffers on
// every call for a layer, so a resumed layer finds what route() prepared).
detail::prepared_input block_input(layer_context& ctx, std::uint32_t il) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    return hp.shared_expert
               ? plan_input(s.block_in, {l.router.type, l.gate_exps.type, l.up_exps.type, l.shexp_gate.type},
                            hp.n_embd, ctx.n_tokens)
               : plan_input(s.block_in, {l.router.type, l.gate_exps.type, l.up_exps.type}, hp.n_embd, ctx.n_tokens);
}

// Chunks of ready experts until none is left; experts arriving meanwhile join the next chunk. A stall when
// chosen experts are still being read, else the combined output.
layer_status run_experts(layer_context& ctx, std::uint32_t il, const team_member& m) {
    auto& moe = ctx.scratch().moe;
    const auto in = block_input(ctx, il);
    while (true) {
        if (m.index == 0) {
            build_chunk(ctx);
        }
        m.sync();
        if (moe.chunk_size == 0) {
            break;
        }
        run_chunk(ctx, il, in, m);
        if (m.index == 0) {
            release_chunk(ctx);
        }
    }
    if (moe.waiting) {
        return layer_status::stalled({il, &moe.fetch, &moe_resume});
    }
    combine(ctx, il, m);
    m.sync();
    return layer_status::finished();
}

} // namespace

layer_status moe_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto in = block_input(ctx, il);
    route(ctx, il, in, m);
    if (ctx.hparams().shared_expert) {
        shared_expert(ctx, il, in, m);
    }
    return run_experts(ctx, il, m);
}

layer_status moe_resume(layer_context& ctx, std::uint32_t il, const team_member& m) { return run_experts(ctx, il, m); }

} // namespace sluice::models
