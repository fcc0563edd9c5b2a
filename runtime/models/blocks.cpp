// Decoder blocks: attention, dense SwiGLU FFN, mixture of experts. Each block is one or two team jobs on
// the compute pool; inside a job the members split tokens, rows or heads between barriers.
#include "runtime/models/blocks.hpp"

#include "kernels/attention.hpp"
#include "kernels/ops.hpp"
#include "kernels/quant.hpp"
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

// Bias, q/k norms and RoPE of row i, then its key and value into its sequence's cache.
void finish_qkv(const layer_context& ctx, const layer_weights& l, std::uint32_t il, std::size_t i) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    float* q = s.q.data() + i * hp.q_dim();
    float* k = s.k.data() + i * hp.kv_dim();
    float* v = s.v.data() + i * hp.v_dim();
    if (l.bq) {
        for (std::size_t j = 0; j < hp.q_dim(); ++j) {
            q[j] += l.bq.f32()[j];
        }
        for (std::size_t j = 0; j < hp.kv_dim(); ++j) {
            k[j] += l.bk.f32()[j];
        }
        for (std::size_t j = 0; j < hp.v_dim(); ++j) {
            v[j] += l.bv.f32()[j];
        }
    }
    if (hp.qk_norm == qk_norm_kind::per_head && l.q_norm) { // optional in glm4moe
        for (std::size_t h = 0; h < hp.n_head; ++h) {
            kernels::rms_norm(q + h * hp.head_dim, l.q_norm.f32(), q + h * hp.head_dim, hp.head_dim, hp.rms_eps);
        }
        for (std::size_t h = 0; h < hp.n_head_kv; ++h) {
            kernels::rms_norm(k + h * hp.head_dim, l.k_norm.f32(), k + h * hp.head_dim, hp.head_dim, hp.rms_eps);
        }
    } else if (hp.qk_norm == qk_norm_kind::whole) {
        kernels::rms_norm(q, l.q_norm.f32(), q, hp.q_dim(), hp.rms_eps);
        kernels::rms_norm(k, l.k_norm.f32(), k, hp.kv_dim(), hp.rms_eps);
    }
    const auto& seg = ctx.segment_of(i);
    const std::int64_t pos = seg.first_pos + static_cast<std::int64_t>(i - seg.row);
    kernels::rope(q, hp.n_head, hp.head_dim, hp.head_dim, pos, hp.rope);
    kernels::rope(k, hp.n_head_kv, hp.head_dim, hp.head_dim, pos, hp.rope);
    auto& cache = *seg.cache;
    kernels::quantize_row(cache.type(), k, cache.key_row(il, static_cast<std::size_t>(pos)), hp.kv_dim());
    kernels::quantize_row(cache.type(), v, cache.value_row(il, static_cast<std::size_t>(pos)), hp.v_dim());
}

void norm_rows(const float* x, const weight_view& w, float* y, std::size_t n, float eps, slice r) {
    for (std::size_t i = r.begin; i < r.end; ++i) {
        kernels::rms_norm(x + i * n, w.f32(), y + i * n, n, eps);
    }
}

void add_rows(float* x, const float* d, std::size_t n, slice r) {
    for (std::size_t i = r.begin * n; i < r.end * n; ++i) {
        x[i] += d[i];
    }
}

// Causal attention of one sequence's rows against its cache, for query heads `heads`.
void attend_segment(const layer_context& ctx, const layer_weights& l, std::uint32_t il, const batch_segment& seg,
                    slice heads) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    auto& cache = *seg.cache;
    kernels::attention_shape shape;
    shape.n_tokens = seg.n_tokens;
    shape.n_heads = hp.n_head;
    shape.n_kv_heads = hp.n_head_kv;
    shape.head_dim = hp.head_dim;
    shape.kv_len = std::size_t{seg.first_pos} + seg.n_tokens;
    shape.q_token_stride = hp.q_dim();
    shape.kv_token_stride = hp.kv_dim();
    shape.kv_head_stride = hp.head_dim;
    shape.first_pos = seg.first_pos;
    shape.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    // A windowed layer sees its window, from a ring of window + batch rows when the context is longer (kv_cache);
    // sinks join the softmax.
    if (const std::uint32_t window = cache.spec(il).window; window != 0) {
        shape.window = window;
        shape.kv_rows = cache.rows(il) < cache.capacity() ? cache.rows(il) : 0;
    }
    shape.sinks = l.sinks ? l.sinks.f32() : nullptr;
    kernels::attention(shape, cache.type(), s.q.data() + std::size_t{seg.row} * hp.q_dim(), cache.keys(il),
                       cache.values(il), s.attn.data() + std::size_t{seg.row} * hp.q_dim(),
                       heads.begin, heads.end);
}

} // namespace

void attention_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t n_embd = hp.n_embd;
    const std::size_t t = m.index, n = m.count;
    const auto in_qkv = plan_input(s.block_in, {l.wq.type, l.wk.type, l.wv.type}, n_embd, n_tok);
    const auto in_o = plan_input(s.wide_in, {l.wo.type}, std::size_t{hp.n_head} * hp.head_dim_v, n_tok);
    const slice tok(n_tok, t, n);
    norm_rows(s.x.data(), l.attn_norm, s.xn.data(), n_embd, hp.rms_eps, tok);
    prepare_rows(in_qkv, s.xn.data(), tok);
    m.sync();
    matmul_share(l.wq, in_qkv, n_tok, s.q.data(), hp.q_dim(), t, n);
    matmul_share(l.wk, in_qkv, n_tok, s.k.data(), hp.kv_dim(), t, n);
    matmul_share(l.wv, in_qkv, n_tok, s.v.data(), hp.v_dim(), t, n);
    m.sync();
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        finish_qkv(ctx, l, il, i);
    }
    m.sync();
    const slice heads(hp.n_head, t, n);
    if (heads.size()) {
        for (const auto& seg : ctx.segments) {
            attend_segment(ctx, l, il, seg, heads);
        }
    }
    m.sync();
    prepare_rows(in_o, s.attn.data(), tok);
    m.sync();
    matmul_share(l.wo, in_o, n_tok, s.tmp.data(), n_embd, t, n);
    m.sync();
    add_rows(s.x.data(), s.tmp.data(), n_embd, tok);
    if (l.bo) {
        for (std::size_t i = tok.begin; i < tok.end; ++i) {
            for (std::size_t j = 0; j < n_embd; ++j) {
                s.x[i * n_embd + j] += l.bo.f32()[j];
            }
        }
    }
    m.sync();
}

namespace {

// out[i] = silu(gate[i]) * up[i] over rows [r.begin, r.end) of `width` values.
void swiglu_rows(float* gate, const float* up, std::size_t width, slice r) {
    if (r.size()) {
        kernels::swiglu(gate + r.begin * width, up + r.begin * width, gate + r.begin * width, r.size() * width);
    }
}

// A dense SwiGLU FFN of prepared input `in` (n_tok rows) into `out` [n_tok][n_embd], as one team member.
struct dense_ffn {
    const weight_view& gate;
    const weight_view& up;
    const weight_view& down;
    const detail::prepared_input& in;
    const detail::prepared_input& hidden_in; ///< planned for `down` over the hidden width
    float* g;
    float* u;
    float* out;
    std::size_t n_tok;

    void run(std::size_t t, std::size_t n, team_barrier& b) const {
        const std::size_t width = gate.rows;
        matmul_share(gate, in, n_tok, g, width, t, n);
        matmul_share(up, in, n_tok, u, width, t, n);
        b.wait();
        const slice tok(n_tok, t, n);
        swiglu_rows(g, u, width, tok);
        prepare_rows(hidden_in, g, tok);
        b.wait();
        matmul_share(down, hidden_in, n_tok, out, down.rows, t, n);
    }
};

} // namespace

void dense_ffn_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const auto in = plan_input(s.block_in, {l.ffn_gate.type, l.ffn_up.type}, hp.n_embd, n_tok);
    const auto hidden_in = plan_input(s.wide_in, {l.ffn_down.type}, hp.n_ff, n_tok);
    const dense_ffn ffn{l.ffn_gate,    l.ffn_up,    l.ffn_down,   in,   hidden_in,
                        s.gate.data(), s.up.data(), s.tmp.data(), n_tok};
    const slice tok(n_tok, m.index, m.count);
    norm_rows(s.x.data(), l.ffn_input_norm(), s.xn.data(), hp.n_embd, hp.rms_eps, tok);
    prepare_rows(in, s.xn.data(), tok);
    m.sync();
    ffn.run(m.index, m.count, m.barrier);
    m.sync();
    add_rows(s.x.data(), s.tmp.data(), hp.n_embd, tok);
    m.sync();
}

layer_status decoder_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    attention_block(ctx, il, m);
    if (ctx.hparams().is_moe()) {
        return moe_block(ctx, il, m);
    }
    dense_ffn_block(ctx, il, m);
    return layer_status::finished();
}

void default_expert_weights_norm(const gguf::metadata& kv, model_hparams& hp, bool fallback) {
    if (!kv.contains(hp.arch + ".expert_weights_norm")) {
        hp.expert_weights_norm = fallback;
    }
}

result<void> require_experts(const model_hparams& hp) {
    if (!hp.is_moe()) {
        return make_error(std::errc::invalid_argument,
                          "metadata key " + hp.arch + ".expert_count: architecture " + hp.arch + " needs experts");
    }
    return {};
}

} // namespace sluice::models
