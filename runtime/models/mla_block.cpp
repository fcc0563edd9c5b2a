// Multi-head latent attention (docs/DEEPSEEK_GLM.md has the math): the low-rank query, the latent and rotary key
// into the cache, then the plain or absorbed form of kernels/mla_attention.hpp, then the output projection. Heads
// are split between team members for the attention itself; tokens and rows for the rest.
#include "runtime/models/mla_block.hpp"

#include "kernels/matmul.hpp"
#include "kernels/mla_attention.hpp"
#include "kernels/ops.hpp"
#include "kernels/quant.hpp"
#include "runtime/models/blocks_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sluice::models {

using detail::matmul_share;
using detail::plan_input;
using detail::prepare_rows;
using runtime::slice;

namespace {

// The shape of layer `il`'s MLA call over one sequence's rows.
kernels::mla_shape shape_of(const layer_context& ctx, const batch_segment& seg) {
    const auto& hp = ctx.hparams();
    kernels::mla_shape s;
    s.n_tokens = seg.n_tokens;
    s.n_heads = hp.n_head;
    s.rank = hp.mla.kv_lora_rank;
    s.rope_dim = hp.rope.n_rot;
    s.nope_dim = hp.mla.nope_dim;
    s.v_dim = hp.mla.v_dim;
    s.kv_len = std::size_t{seg.first_pos} + seg.n_tokens;
    s.first_pos = seg.first_pos;
    s.cache_stride = s.rank + s.rope_dim;
    const float mscale = hp.mla.softmax_mscale;
    s.scale = mscale * mscale / std::sqrt(static_cast<float>(s.nope_dim + s.rope_dim));
    return s;
}

// The per-head queries into mla.q and the latent plus rotary key into mla.kv_a, for every token of the batch.
void project(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t t = m.index, n = m.count;
    const std::size_t q_width = std::size_t{hp.n_head} * (hp.mla.nope_dim + hp.rope.n_rot);
    const std::size_t kv_width = hp.mla.kv_lora_rank + hp.rope.n_rot;
    const weight_view& wq = l.wq_a ? l.wq_a : l.wq;
    const auto in = plan_input(s.block_in, {wq.type, l.wkv_a.type}, hp.n_embd, n_tok);
    const slice tok(n_tok, t, n);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::rms_norm(s.x.data() + i * hp.n_embd, l.attn_norm.f32(), s.xn.data() + i * hp.n_embd, hp.n_embd,
                          hp.rms_eps);
    }
    prepare_rows(in, s.xn.data(), tok);
    m.sync();
    matmul_share(l.wkv_a, in, n_tok, s.mla.kv_a.data(), kv_width, t, n);
    if (!l.wq_a) {
        matmul_share(l.wq, in, n_tok, s.mla.q.data(), q_width, t, n);
        m.sync();
        return;
    }
    const std::size_t r_q = hp.mla.q_lora_rank;
    matmul_share(l.wq_a, in, n_tok, s.mla.q_a.data(), r_q, t, n);
    m.sync();
    const auto q_in = plan_input(s.wide_in, {l.wq_b.type}, r_q, n_tok);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        float* qa = s.mla.q_a.data() + i * r_q;
        kernels::rms_norm(qa, l.q_a_norm.f32(), qa, r_q, hp.rms_eps);
    }
    prepare_rows(q_in, s.mla.q_a.data(), tok);
    m.sync();
    matmul_share(l.wq_b, q_in, n_tok, s.mla.q.data(), q_width, t, n);
    m.sync();
}

// Token i: the normalised latent and the rotated key into the cache, and the rotated query parts.
void finish_token(layer_context& ctx, std::uint32_t il, std::size_t i) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t r = hp.mla.kv_lora_rank;
    const std::size_t d_r = hp.rope.n_rot;
    const std::size_t qk = hp.mla.nope_dim + d_r;
    const auto& seg = ctx.segment_of(i);
    const std::int64_t pos = std::int64_t{seg.first_pos} + static_cast<std::int64_t>(i - seg.row);
    float* kv = s.mla.kv_a.data() + i * (r + d_r);
    kernels::rms_norm(kv, l.kv_a_norm.f32(), kv, r, hp.rms_eps);
    kernels::rope(kv + r, 1, d_r, d_r, pos, hp.rope);
    kernels::rope(s.mla.q.data() + i * hp.n_head * qk + hp.mla.nope_dim, hp.n_head, d_r, qk, pos, hp.rope);
    auto& cache_of_row = *seg.cache;
    kernels::quantize_row(cache_of_row.type(), kv, cache_of_row.key_row(il, static_cast<std::size_t>(pos)), r + d_r);
}

// One token and head through a per-head slab of a 3-D weight: y = W_h x (rows of `w.cols` values), x prepared into
// the head's row of mla_head_in.
void head_product(const weight_view& w, std::size_t head, const float* x, std::byte* act, float* y) {
    kernels::prepare_activations(w.type, x, w.cols, 1, w.cols, act);
    const std::byte* slab = w.data + head * w.rows * w.row_bytes;
    kernels::matmul_prepared(w.type, slab, w.row_bytes, 0, w.rows, w.cols, act, 1, y, w.rows);
}

// Absorbed form for member m's heads: q~ = [W_kb,h^T q_nope, q_rope] into s.q, attention over the latent cache into
// s.attn, then W_vb,h of each latent output into mla.out.
void attend_absorbed(layer_context& ctx, std::uint32_t il, const batch_segment& seg, const kernels::mla_shape& sh,
                     slice heads) {
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t width = sh.rank + sh.rope_dim;
    const std::size_t qk = sh.nope_dim + sh.rope_dim;
    const std::size_t r0 = std::size_t{seg.row} * sh.n_heads; // the segment's first (token, head) pair
    float* const q_abs = s.q.data() + r0 * width;
    float* const latent = s.attn.data() + r0 * sh.rank;
    const float* const q_mla = s.mla.q.data() + r0 * qk;
    float* const out = s.mla.out.data() + r0 * sh.v_dim;
    // Head h owns one fixed stretch of mla_head_in for both products: members move from the key products to the
    // value products without a barrier, so a head's stretch must not depend on the product.
    auto& buf = s.mla_head_in.by_type[0];
    const std::size_t stride = buf.size() / sh.n_heads;
    std::byte* act = buf.data();
    for (std::size_t t = 0; t < sh.n_tokens; ++t) {
        for (std::size_t h = heads.begin; h < heads.end; ++h) {
            const float* q = q_mla + (t * sh.n_heads + h) * qk;
            float* qa = q_abs + (t * sh.n_heads + h) * width;
            head_product(l.wk_b, h, q, act + h * stride, qa);
            std::memcpy(qa + sh.rank, q + sh.nope_dim, sh.rope_dim * sizeof(float));
        }
    }
    kernels::mla_attention_absorbed(sh, seg.cache->type(), q_abs, seg.cache->keys(il), latent, heads.begin,
                                    heads.end);
    for (std::size_t t = 0; t < sh.n_tokens; ++t) {
        for (std::size_t h = heads.begin; h < heads.end; ++h) {
            head_product(l.wv_b, h, latent + (t * sh.n_heads + h) * sh.rank, act + h * stride,
                         out + (t * sh.n_heads + h) * sh.v_dim);
        }
    }
}

} // namespace

void mla_attention_block(layer_context& ctx, std::uint32_t il, const team_member& m) {
    const auto& hp = ctx.hparams();
    const auto& l = ctx.layer(il);
    auto& s = ctx.scratch();
    const std::size_t n_tok = ctx.n_tokens;
    const std::size_t t = m.index, n = m.count;
    project(ctx, il, m);
    const slice tok(n_tok, t, n);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        finish_token(ctx, il, i);
    }
    m.sync();
    const slice heads(hp.n_head, t, n);
    for (const auto& seg : ctx.segments) {
        const auto sh = shape_of(ctx, seg);
        const bool plain = seg.n_tokens > 1 && sh.kv_len <= s.max_batch;
        const std::size_t r0 = std::size_t{seg.row} * hp.n_head;
        if (heads.size() && plain) {
            const void* cache = seg.cache->keys(il);
            kernels::mla_decompress(sh, l.wk_b.type, l.wk_b.data, l.wv_b.data, seg.cache->type(), cache, sh.kv_len,
                                    s.mla.k_nope.data(), s.mla.v.data(), heads.begin, heads.end);
            kernels::mla_attention_plain(sh, seg.cache->type(), s.mla.q.data() + r0 * (sh.nope_dim + sh.rope_dim),
                                         s.mla.k_nope.data(), s.mla.v.data(), cache, s.mla.out.data() + r0 * sh.v_dim,
                                         heads.begin, heads.end);
        } else if (heads.size()) {
            attend_absorbed(ctx, il, seg, sh, heads);
        }
    }
    m.sync();
    const std::size_t o_width = std::size_t{hp.n_head} * hp.mla.v_dim;
    const auto in_o = plan_input(s.wide_in, {l.wo.type}, o_width, n_tok);
    prepare_rows(in_o, s.mla.out.data(), tok);
    m.sync();
    matmul_share(l.wo, in_o, n_tok, s.tmp.data(), hp.n_embd, t, n);
    m.sync();
    for (std::size_t i = tok.begin * hp.n_embd; i < tok.end * hp.n_embd; ++i) {
        s.x[i] += s.tmp[i];
    }
    m.sync();
}

} // namespace sluice::models
