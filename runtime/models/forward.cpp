// The forward pass driver: embeddings, the architecture's layer hook for every layer, final norm and logits.
#include "runtime/models/forward.hpp"

#include "kernels/quant.hpp"
#include "runtime/compute/team.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/blocks_util.hpp"

#include <boost/asio/this_coro.hpp>

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
        moe.chunk_expert.resize(b * top_k);
        moe.chunk_token.resize(b * top_k);
        moe.chunk_row.resize(b * top_k);
        moe.unique_ids.reserve(hp.n_expert);
        moe.unique_index.assign(hp.n_expert, -1);
        moe.in_chunk.assign(hp.n_expert, 0);
        moe.fetch.reserve(hp.n_expert);
        moe.prediction.reserve(hp.n_expert);
        for (auto& p : moe.parts) {
            p.assign(hp.n_expert, nullptr);
        }
        pred_xn.resize(b * hp.n_embd);
        pred_router.resize(b * hp.n_expert);
        pred_ids.resize(b * top_k);
        pred_weights.resize(b * top_k);
        pred_unique.reserve(hp.n_expert);
    }
    if (hp.shared_expert) {
        sh_gate.resize(b * hp.n_ff_shexp);
        sh_up.resize(b * hp.n_ff_shexp);
    }
    if (hp.hybrid.enabled()) {
        const auto& h = hp.hybrid;
        hybrid.qkv.resize(b * h.conv_channels());
        hybrid.conv.resize(b * h.conv_channels());
        hybrid.z.resize(b * h.inner_size);
        hybrid.ab.resize(b * 2 * h.time_step_rank);
        hybrid.g.resize(b * h.time_step_rank);
        hybrid.beta.resize(b * h.time_step_rank);
        hybrid.out.resize(b * h.inner_size);
        hybrid.qg.resize(b * 2 * hp.q_dim());
        hybrid.gate.resize(b * hp.q_dim());
    }
    if (hp.mla.enabled()) {
        const auto& m = hp.mla;
        const std::size_t heads = hp.n_head;
        mla.q_a.resize(b * m.q_lora_rank);
        mla.kv_a.resize(b * (m.kv_lora_rank + hp.rope.n_rot));
        mla.q.resize(b * heads * (m.nope_dim + hp.rope.n_rot));
        mla.k_nope.resize(b * heads * m.nope_dim);
        mla.v.resize(b * heads * m.v_dim);
        mla.out.resize(b * heads * m.v_dim);
    }
}

void forward_scratch::size_for(const model_hparams& hp, const model_weights& w) {
    // Every weight type in use, to size each prepared-activation slot for the largest of them.
    std::vector<kernels::quant_type> types{w.output.type};
    for (const auto& l : w.layers) {
        for (const auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.router,
                              &l.gate_exps, &l.up_exps, &l.down_exps, &l.shexp_gate, &l.shexp_up, &l.shexp_down,
                              &l.hybrid.qkv, &l.hybrid.gate, &l.hybrid.alpha, &l.hybrid.beta, &l.hybrid.ba,
                              &l.hybrid.out, &l.wq_a, &l.wq_b, &l.wkv_a, &l.wk_b, &l.wv_b}) {
            if (*v && std::find(types.begin(), types.end(), v->type) == types.end()) {
                types.push_back(v->type);
            }
        }
    }
    auto widest = [&](std::size_t cols) {
        std::size_t bytes = 0;
        const std::size_t padded = (cols + 255) / 256 * 256; // an upper bound for every block size
        for (const auto t : types) {
            bytes = std::max(bytes, kernels::prepared_row_bytes(t, padded));
        }
        return bytes;
    };
    const std::size_t b = max_batch;
    const std::size_t top_k = std::max<std::size_t>(hp.n_expert_used, 1);
    auto size_slots = [](prepared_slots& p, std::size_t types, std::size_t bytes) {
        p.by_type.assign(types, std::vector<std::byte>(bytes));
    };
    size_slots(block_in, 4, widest(hp.n_embd) * b);
    const std::size_t hidden =
        std::max({std::size_t{hp.n_head} * hp.head_dim_v, std::size_t{hp.n_ff}, std::size_t{hp.n_ff_exp},
                  std::size_t{hp.hybrid.inner_size}, std::size_t{hp.mla.q_lora_rank},
                  std::size_t{hp.n_head} * hp.mla.v_dim});
    size_slots(wide_in, 1, widest(hidden) * b * top_k);
    size_slots(shared_in, 1, widest(std::max<std::size_t>(hp.n_ff_shexp, 1)) * b);
    if (hp.is_moe()) {
        size_slots(prediction_in, 1, widest(hp.n_embd) * b); // the next layer's router input
    }
    if (hp.mla.enabled()) {
        size_slots(mla_head_in, 1, widest(std::max(hp.mla.nope_dim, hp.mla.kv_lora_rank)) * hp.n_head);
    }
}

forward_runner::forward_runner(const architecture& arch, const model_hparams& hp, const model_weights& w,
                               runtime::compute_pool& pool, experts::expert_source& experts,
                               std::uint32_t max_batch)
    : arch_(&arch), hp_(&hp), weights_(&w), pool_(&pool), experts_(&experts), scratch_(hp, std::max(1u, max_batch)) {
    scratch_.size_for(hp, w);
}

void forward_runner::set_routing(experts::routing_log* log) {
    routing_ = {};
    if (log != nullptr) {
        log->attach(routing_, scratch_.max_batch);
    }
}

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
    const auto executor = co_await boost::asio::this_coro::executor;
    scratch_.moe.fetch.bind(executor);
    scratch_.moe.prediction.bind(executor);
    experts_->attach(executor);
    // Hands back whatever the batches hold and detaches on every way out, error or not.
    struct detach_guard {
        experts::expert_source* source;
        forward_scratch* s;
        ~detach_guard() {
            source->release_all(s->moe.fetch);
            source->release_all(s->moe.prediction);
            source->detach();
        }
    } guard{experts_, &scratch_};
    // A windowed layer's ring takes at most cache.max_append() new positions per batch.
    const std::size_t batch = std::min<std::size_t>(scratch_.max_batch, std::max<std::uint32_t>(cache.max_append(), 1));
    for (std::size_t done = 0; done < tokens.size();) {
        const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(batch, tokens.size() - done));
        logits_request req;
        if (mode == logits_mode::all) {
            req = {0, n, logits.data() + done * hp.n_vocab};
        } else if (done + n == tokens.size()) {
            req = {n - 1, 1, logits.data()};
        }
        if (auto r = co_await run_batch(cache, tokens.subspan(done, n), req); !r) {
            co_return r;
        }
        done += n;
    }
    co_return result<void>{};
}

boost::asio::awaitable<result<void>> forward_runner::run_batch(kv_cache& cache, std::span<const std::int32_t> tokens,
                                                               logits_request logits) {
    const auto& hp = *hp_;
    const auto& emb = weights_->token_embd;
    const std::size_t n_tok = tokens.size();
    layer_context ctx(hp, *weights_, *pool_, *experts_, cache, scratch_);
    ctx.n_tokens = static_cast<std::uint32_t>(n_tok);
    ctx.first_pos = cache.size();
    if (routing_.log != nullptr) {
        routing_.log->begin(routing_, ctx.first_pos, ctx.n_tokens);
        ctx.routing = &routing_;
    }
    // The whole batch is one team job; it stops early only when a layer stalls on its experts: the runner awaits
    // the fetch, then a new job resumes that layer and goes on.
    std::optional<layer_stall> resume_at;
    while (true) {
        std::optional<layer_stall> stalled;
        co_await runtime::run_team(*pool_, [&](std::size_t t, std::size_t n, runtime::team_barrier& b) {
            const team_member m{t, n, b};
            std::uint32_t il = 0;
            auto stop = [&](const layer_status& st) {
                if (m.index == 0) {
                    stalled = st.stall; // every member stalls at the same layer; one writes it
                }
            };
            if (resume_at) {
                const auto st = resume_at->resume(ctx, resume_at->layer, m);
                if (!st.done()) {
                    return stop(st);
                }
                il = resume_at->layer + 1;
            } else {
                const runtime::slice tok(n_tok, t, n);
                for (std::size_t i = tok.begin; i < tok.end; ++i) {
                    kernels::dequantize_row(emb.type, emb.data + static_cast<std::size_t>(tokens[i]) * emb.row_bytes,
                                            scratch_.x.data() + i * hp.n_embd, hp.n_embd);
                }
                m.sync();
            }
            for (; il < hp.n_layer; ++il) {
                const auto st = arch_->forward_layer(ctx, il, m);
                if (!st.done()) {
                    return stop(st);
                }
            }
            if (logits.count) {
                output_logits(logits, m);
            }
        });
        if (!stalled) {
            break;
        }
        if (auto r = co_await stalled->fetch->wait_progress(); !r) {
            co_return r.error().with_context("layer " + std::to_string(stalled->layer) + " experts");
        }
        resume_at = stalled;
    }
    cache.advance(static_cast<std::uint32_t>(n_tok));
    experts_->count_tokens(n_tok);
    if (routing_.log != nullptr) {
        if (auto r = routing_.log->end(routing_); !r) {
            co_return r.error();
        }
    }
    co_return result<void>{};
}

void forward_runner::output_logits(const logits_request& req, const team_member& m) {
    const std::size_t t = m.index, n = m.count;
    const auto& hp = *hp_;
    const auto& w = *weights_;
    auto& s = scratch_;
    const auto in = detail::plan_input(s.block_in, {w.output.type}, hp.n_embd, req.count);
    const runtime::slice tok(req.count, t, n);
    for (std::size_t i = tok.begin; i < tok.end; ++i) {
        kernels::rms_norm(s.x.data() + (req.first + i) * hp.n_embd, w.output_norm.f32(), s.xn.data() + i * hp.n_embd,
                          hp.n_embd, hp.rms_eps);
    }
    detail::prepare_rows(in, s.xn.data(), tok);
    m.sync();
    detail::matmul_share(w.output, in, req.count, req.out, hp.n_vocab, t, n);
}

} // namespace sluice::models
