// The forward pass driver: embeddings, the architecture's layer hook for every layer, final norm and logits.
#include "runtime/models/forward.hpp"

#include "kernels/quant.hpp"
#include "runtime/compute/team.hpp"
#include "runtime/models/blocks_util.hpp"

#include <algorithm>

namespace sluice::models {

forward_scratch::forward_scratch(const model_hparams& hp, std::uint32_t max_batch_) : max_batch(max_batch_) {
    const std::size_t b = max_batch;
    const std::size_t top_k = std::max<std::size_t>(hp.n_expert_used, 1);
    const std::size_t ff = std::max(hp.n_ff, hp.n_ff_exp);
    x.resize(b * hp.n_embd);
    xn.resize(b * hp.n_embd);
    q.resize(b * hp.q_dim());
    k.resize(b * hp.kv_dim());
    v.resize(b * hp.v_dim());
    attn.resize(b * hp.n_head * hp.head_dim_v);
    tmp.resize(b * hp.n_embd);
    gate.resize(b * top_k * ff);
    up.resize(b * top_k * ff);
    if (hp.is_moe()) {
        moe_out.resize(b * top_k * hp.n_embd);
        router.resize(b * hp.n_expert);
        weights.resize(b * top_k);
        ids.resize(b * top_k);
        sel_token.resize(b * top_k);
        sel_row.resize(b * top_k);
    }
    if (hp.shared_expert) {
        sh_gate.resize(b * hp.n_ff_shexp);
        sh_up.resize(b * hp.n_ff_shexp);
    }
}

forward_runner::forward_runner(const architecture& arch, const model_hparams& hp, const model_weights& w,
                               runtime::compute_pool& pool, expert_source& experts, std::uint32_t max_batch)
    : arch_(&arch), hp_(&hp), weights_(&w), pool_(&pool), experts_(&experts), scratch_(hp, std::max(1u, max_batch)) {}

boost::asio::awaitable<result<void>> forward_runner::forward(kv_cache& cache, std::span<const std::int32_t> tokens,
                                                             logits_mode mode, std::vector<float>& logits) {
    const auto& hp = *hp_;
    for (const auto id : tokens) {
        if (id < 0 || static_cast<std::uint32_t>(id) >= hp.n_vocab) {
            co_return make_error(std::errc::invalid_argument, "token id " + std::to_string(id) +
                                                                  " is outside the vocabulary of " +
                                                                  std::to_string(hp.n_vocab));
        }
    }
    if (tokens.empty()) {
        co_return make_error(std::errc::invalid_argument, "forward pass of zero tokens");
    }
    if (std::size_t{cache.size()} + tokens.size() > cache.capacity()) {
        co_return make_error(std::errc::no_buffer_space,
                             "context full: " + std::to_string(cache.size()) + " + " + std::to_string(tokens.size()) +
                                 " tokens exceed the context of " + std::to_string(cache.capacity()));
    }
    logits.resize((mode == logits_mode::all ? tokens.size() : 1) * std::size_t{hp.n_vocab});
    for (std::size_t done = 0; done < tokens.size();) {
        const std::size_t n = std::min<std::size_t>(scratch_.max_batch, tokens.size() - done);
        if (auto r = co_await run_batch(cache, tokens.subspan(done, n)); !r) {
            co_return r;
        }
        if (mode == logits_mode::all) {
            co_await output_logits(static_cast<std::uint32_t>(n), 0, static_cast<std::uint32_t>(n),
                                   logits.data() + done * hp.n_vocab);
        } else if (done + n == tokens.size()) {
            co_await output_logits(static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n - 1), 1, logits.data());
        }
        done += n;
    }
    co_return result<void>{};
}

boost::asio::awaitable<result<void>> forward_runner::run_batch(kv_cache& cache, std::span<const std::int32_t> tokens) {
    const auto& hp = *hp_;
    const auto& emb = weights_->token_embd;
    const std::size_t n_tok = tokens.size();
    co_await runtime::run_team(*pool_, [&](std::size_t t, std::size_t n, runtime::team_barrier&) {
        const runtime::slice tok(n_tok, t, n);
        for (std::size_t i = tok.begin; i < tok.end; ++i) {
            kernels::dequantize_row(emb.type, emb.data + static_cast<std::size_t>(tokens[i]) * emb.row_bytes,
                                    scratch_.x.data() + i * hp.n_embd, hp.n_embd);
        }
    });
    layer_context ctx(hp, *weights_, *pool_, *experts_, cache, scratch_);
    ctx.n_tokens = static_cast<std::uint32_t>(n_tok);
    ctx.first_pos = cache.size();
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        if (auto r = co_await arch_->forward_layer(ctx, il); !r) {
            co_return r;
        }
    }
    cache.advance(static_cast<std::uint32_t>(n_tok));
    co_return result<void>{};
}

boost::asio::awaitable<void> forward_runner::output_logits(std::uint32_t n_tokens, std::uint32_t first,
                                                           std::uint32_t count, float* out) {
    (void)n_tokens;
    const auto& hp = *hp_;
    const auto& w = *weights_;
    auto& s = scratch_;
    const auto in = detail::plan_input(s, 0, {w.output.type}, hp.n_embd, count);
    co_await runtime::run_team(*pool_, [&](std::size_t t, std::size_t n, runtime::team_barrier& b) {
        const runtime::slice tok(count, t, n);
        for (std::size_t i = tok.begin; i < tok.end; ++i) {
            kernels::rms_norm(s.x.data() + (first + i) * hp.n_embd, w.output_norm.f32(), s.xn.data() + i * hp.n_embd,
                              hp.n_embd, hp.rms_eps);
        }
        detail::prepare_rows(in, s.xn.data(), tok);
        b.wait();
        detail::matmul_share(w.output, in, count, out, hp.n_vocab, t, n);
    });
}

} // namespace sluice::models
