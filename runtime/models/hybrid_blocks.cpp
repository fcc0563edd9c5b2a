// Gated DeltaNet and gated attention blocks. Each step is split between team members by tokens, channels or heads,
// between barriers, like the standard blocks.
#include "runtime/models/hybrid_blocks.hpp"

#include "kernels/attention.hpp"
#include "kernels/delta_net.hpp"
#include "kernels/linear_attention_ops.hpp"
#include "kernels/ops.hpp"
#include "kernels/quant.hpp"
#include "kernels/rope_multi.hpp"
#include "runtime/models/blocks_util.hpp"

#include <cmath>
#include <cstring>

namespace sluice::models {

using detail::matmul_share;
using detail::plan_input;
using detail::prepare_rows;
using runtime::slice;

namespace {

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

/// Token i's decay and strength inputs, unfused when the file keeps them per key head as [beta r | alpha r].
void gates_of_token(const hybrid_hparams& h, const hybrid_layer_weights& w, forward_scratch::hybrid_step& b,
                    std::size_t i) {
    const std::size_t hv = h.time_step_rank;
    float* ab = b.ab.data() + i * 2 * hv; // [alpha hv | beta hv] after this
    if (w.ba) {
        const std::size_t r = hv / h.group_count;
        float fused[1024];
        const std::size_t n = std::min<std::size_t>(2 * hv, 1024);
        std::memcpy(fused, ab, n * sizeof(float));
        for (std::size_t g = 0; g < h.group_count; ++g) {
            for (std::size_t j = 0; j < r; ++j) {
                ab[hv + g * r + j] = fused[g * 2 * r + j];
                ab[g * r + j] = fused[g * 2 * r + r + j];
            }
        }
    }
    kernels::delta_net_gates(ab, ab + hv, w.dt.f32(), w.a.f32(), hv, b.g.data() + i * hv, b.beta.data() + i * hv);
}

kernels::delta_net_shape delta_shape(const hybrid_hparams& h, std::size_t n_tok) {
    kernels::delta_net_shape s;
    s.n_tokens = n_tok;
    s.n_heads = h.time_step_rank;
    s.n_k_heads = h.group_count;
    s.order = h.tiled_value_heads ? kernels::delta_head_order::tiled : kernels::delta_head_order::grouped;
    s.dk = s.dv = h.state_size;
    s.q_stride = s.k_stride = s.v_stride = h.conv_channels();
    s.out_stride = h.inner_size;
    s.gate_stride = h.time_step_rank;
    s.q_scale = 1.0f / std::sqrt(static_cast<float>(h.state_size));
    return s;
}

} // namespace

delta_net_state_layout delta_net_state_of(const hybrid_hparams& h) noexcept {
    const std::uint64_t conv = std::uint64_t{h.conv_kernel - 1} * h.conv_channels();
    return {conv, h.state_floats()};
}

void delta_net_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& h = hp.hybrid;
    const auto& l = ctx.layer(il);
    const auto& w = l.hybrid;
    auto& s = ctx.scratch();
    auto& b = s.hybrid;
    const std::size_t n_tok = ctx.n_tokens, n_embd = hp.n_embd, t = m.index, n = m.count;
    const std::size_t channels = h.conv_channels(), hv = h.time_step_rank, d = h.state_size;
    const slice tok(n_tok, t, n);
    // Projections of the normalised input.
    const auto in = w.ba ? plan_input(s.block_in, {w.qkv.type, w.gate.type, w.ba.type}, n_embd, n_tok)
                         : plan_input(s.block_in, {w.qkv.type, w.gate.type, w.alpha.type, w.beta.type}, n_embd, n_tok);
    norm_rows(s.x.data(), l.attn_norm, s.xn.data(), n_embd, hp.rms_eps, tok);
    prepare_rows(in, s.xn.data(), tok);
    m.sync();
    matmul_share(w.qkv, in, n_tok, b.qkv.data(), channels, t, n);
    matmul_share(w.gate, in, n_tok, b.z.data(), h.inner_size, t, n);
    if (w.ba) {
        matmul_share(w.ba, in, n_tok, b.ab.data(), 2 * hv, t, n);
    } else {
        matmul_share(w.alpha, in, n_tok, b.ab.data(), 2 * hv, t, n);
        matmul_share(w.beta, in, n_tok, b.ab.data() + hv, 2 * hv, t, n);
    }
    m.sync();
    // The causal convolution over each sequence's carried history (split by channels), the gates (by tokens).
    const auto layout = delta_net_state_of(h);
    const slice ch(channels, t, n);
    for (const auto& seg : ctx.segments) {
        const std::size_t r0 = seg.row;
        kernels::causal_conv1d(b.qkv.data() + r0 * channels, channels, seg.n_tokens, channels, w.conv1d.f32(),
                               h.conv_kernel, seg.cache->state(il), b.conv.data() + r0 * channels, channels, true,
                               ch.begin, ch.end);
    }
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        gates_of_token(h, w, b, i);
    }
    m.sync();
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::l2_norm_rows(b.conv.data() + i * channels, 2 * h.group_count, d, d, 1e-6f);
    }
    m.sync();
    // The delta rule of each sequence over its own state (split by value heads).
    const slice heads(hv, t, n);
    if (heads.size()) {
        for (const auto& seg : ctx.segments) {
            const std::size_t r0 = seg.row;
            const auto shape = delta_shape(h, seg.n_tokens);
            const float* q = b.conv.data() + r0 * channels;
            const float* k = q + std::size_t{h.group_count} * d;
            const float* v = q + 2 * std::size_t{h.group_count} * d;
            kernels::delta_net_recurrent(shape, q, k, v, b.g.data() + r0 * hv, b.beta.data() + r0 * hv,
                                         seg.cache->state(il) + layout.conv_floats, b.out.data() + r0 * h.inner_size,
                                         heads.begin, heads.end);
        }
    }
    m.sync();
    // Gated output norm, output projection, residual.
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        for (std::size_t head = 0; head < hv; ++head) {
            float* o = b.out.data() + i * h.inner_size + head * d;
            kernels::rms_norm_silu_gated(o, w.norm.f32(), b.z.data() + i * h.inner_size + head * d, o, d, hp.rms_eps);
        }
    }
    const auto in_o = plan_input(s.wide_in, {w.out.type}, h.inner_size, n_tok);
    prepare_rows(in_o, b.out.data(), tok);
    m.sync();
    matmul_share(w.out, in_o, n_tok, s.tmp.data(), n_embd, t, n);
    m.sync();
    add_rows(s.x.data(), s.tmp.data(), n_embd, tok);
    m.sync();
}

namespace {

/// Token i: split query and gate, per-head norms, rotary, key and value into the cache.
void finish_gated_qkv(const layer_context& ctx, const layer_weights& l, std::uint32_t il, std::size_t i) {
    const auto& hp = ctx.hparams();
    auto& s = ctx.scratch();
    const std::size_t dh = hp.head_dim, qd = hp.q_dim();
    float* q = s.q.data() + i * qd;
    float* k = s.k.data() + i * hp.kv_dim();
    const float* qg = s.hybrid.qg.data() + i * 2 * qd;
    for (std::size_t head = 0; head < hp.n_head; ++head) {
        std::memcpy(q + head * dh, qg + head * 2 * dh, dh * sizeof(float));
        std::memcpy(s.hybrid.gate.data() + i * qd + head * dh, qg + head * 2 * dh + dh, dh * sizeof(float));
        kernels::rms_norm(q + head * dh, l.q_norm.f32(), q + head * dh, dh, hp.rms_eps);
    }
    for (std::size_t head = 0; head < hp.n_head_kv; ++head) {
        kernels::rms_norm(k + head * dh, l.k_norm.f32(), k + head * dh, dh, hp.rms_eps);
    }
    kernels::rope_multi_params rp;
    rp.n_rot = hp.rope.n_rot;
    rp.freq_base = hp.rope.freq_base;
    rp.freq_scale = hp.rope.freq_scale;
    rp.sections = hp.hybrid.rope_sections;
    const auto& seg = ctx.segment_of(i);
    const std::int64_t pos = seg.first_pos + static_cast<std::int64_t>(i - seg.row);
    const std::array<std::int64_t, 4> positions{pos, pos, pos, pos}; // text: every section at the token position
    kernels::rope_multi(q, hp.n_head, dh, positions, rp);
    kernels::rope_multi(k, hp.n_head_kv, dh, positions, rp);
    auto& cache = *seg.cache;
    kernels::quantize_row(cache.type(), k, cache.key_row(il, static_cast<std::size_t>(pos)), hp.kv_dim());
    kernels::quantize_row(cache.type(), s.v.data() + i * hp.v_dim(), cache.value_row(il, static_cast<std::size_t>(pos)),
                          hp.v_dim());
}

} // namespace

void gated_attention_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens, n_embd = hp.n_embd, t = m.index, n = m.count;
    const std::size_t qd = hp.q_dim();
    const auto in_qkv = plan_input(s.block_in, {l.wq.type, l.wk.type, l.wv.type}, n_embd, n_tok);
    const slice tok(n_tok, t, n);
    norm_rows(s.x.data(), l.attn_norm, s.xn.data(), n_embd, hp.rms_eps, tok);
    prepare_rows(in_qkv, s.xn.data(), tok);
    m.sync();
    matmul_share(l.wq, in_qkv, n_tok, s.hybrid.qg.data(), 2 * qd, t, n);
    matmul_share(l.wk, in_qkv, n_tok, s.k.data(), hp.kv_dim(), t, n);
    matmul_share(l.wv, in_qkv, n_tok, s.v.data(), hp.v_dim(), t, n);
    m.sync();
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        finish_gated_qkv(ctx, l, il, i);
    }
    m.sync();
    const slice heads(hp.n_head, t, n);
    if (heads.size()) {
        for (const auto& seg : ctx.segments) {
            auto& cache = *seg.cache;
            kernels::attention_shape shape;
            shape.n_tokens = seg.n_tokens;
            shape.n_heads = hp.n_head;
            shape.n_kv_heads = hp.n_head_kv;
            shape.head_dim = hp.head_dim;
            shape.kv_len = std::size_t{seg.first_pos} + seg.n_tokens;
            shape.q_token_stride = qd;
            shape.kv_token_stride = hp.kv_dim();
            shape.kv_head_stride = hp.head_dim;
            shape.first_pos = seg.first_pos;
            shape.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
            kernels::attention(shape, cache.type(), s.q.data() + seg.row * qd, cache.keys(il), cache.values(il),
                               s.attn.data() + seg.row * qd, heads.begin, heads.end);
        }
    }
    m.sync();
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::sigmoid_gate(s.attn.data() + i * qd, s.hybrid.gate.data() + i * qd, qd);
    }
    const auto in_o = plan_input(s.wide_in, {l.wo.type}, qd, n_tok);
    prepare_rows(in_o, s.attn.data(), tok);
    m.sync();
    matmul_share(l.wo, in_o, n_tok, s.tmp.data(), n_embd, t, n);
    m.sync();
    add_rows(s.x.data(), s.tmp.data(), n_embd, tok);
    m.sync();
}

} // namespace sluice::models
