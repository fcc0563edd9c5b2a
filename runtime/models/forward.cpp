// The forward pass driver: embeddings, the architecture's layer hook for every layer, final norm and logits.
#include "runtime/models/forward.hpp"

#include "kernels/quant.hpp"
#include "runtime/compute/team.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/blocks_util.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>

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
        moe.prediction2.reserve(hp.n_expert);
        for (auto& p : moe.parts) {
            p.assign(hp.n_expert, nullptr);
        }
        pred_xn.resize(b * hp.n_embd);
        pred_router.resize(b * hp.n_expert);
        pred_ids.resize(b * top_k);
        pred_weights.resize(b * top_k);
        pred_unique.reserve(hp.n_expert);
        pred_votes.reserve(hp.n_expert);
        pred2_ids.resize(b * top_k);
        pred2_unique.reserve(hp.n_expert);
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

result<void> forward_runner::check(const kv_cache& cache, std::span<const std::int32_t> tokens) const {
    const auto& hp = *hp_;
    for (const auto id : tokens) {
        if (id < 0 || static_cast<std::uint32_t>(id) >= hp.n_vocab) {
            return make_error(std::errc::invalid_argument, "token id " + std::to_string(id) +
                                                               " is outside the vocabulary of " +
                                                               std::to_string(hp.n_vocab));
        }
    }
    if (tokens.empty()) {
        return make_error(std::errc::invalid_argument, "forward pass of zero tokens");
    }
    if (std::size_t{cache.size()} + tokens.size() > cache.capacity()) {
        return make_error(std::errc::no_buffer_space,
                          "context full: " + std::to_string(cache.size()) + " + " + std::to_string(tokens.size()) +
                              " tokens exceed the context of " + std::to_string(cache.capacity()));
    }
    return {};
}

namespace {

// Hands back whatever the batches hold and detaches on every way out, error or not.
struct detach_guard {
    experts::expert_source* source;
    forward_scratch* s;
    ~detach_guard() {
        source->release_all(s->moe.fetch);
        source->release_all(s->moe.prediction);
        source->release_all(s->moe.prediction2);
        source->detach();
    }
};

} // namespace

boost::asio::awaitable<result<void>> forward_runner::forward(kv_cache& cache, std::span<const std::int32_t> tokens,
                                                             logits_mode mode, std::vector<float>& logits) {
    const auto& hp = *hp_;
    if (auto ok = check(cache, tokens); !ok) {
        co_return ok;
    }
    logits.resize((mode == logits_mode::all ? tokens.size() : 1) * std::size_t{hp.n_vocab});
    const auto executor = co_await boost::asio::this_coro::executor;
    scratch_.moe.fetch.bind(executor);
    scratch_.moe.prediction.bind(executor);
    scratch_.moe.prediction2.bind(executor);
    experts_->attach(executor);
    const detach_guard guard{experts_, &scratch_};
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
        const batch_segment seg{&cache, cache.size(), 0, n};
        if (auto r = co_await run_batch(tokens.subspan(done, n), std::span(&seg, 1), std::span(&req, 1), 0, nullptr);
            !r) {
            co_return r;
        }
        done += n;
    }
    co_return result<void>{};
}

boost::asio::awaitable<result<void>> forward_runner::forward_rows(kv_cache& cache, std::span<const float> rows,
                                                                  logits_mode mode, std::vector<float>& logits) {
    const auto& hp = *hp_;
    const std::size_t n = rows.size() / hp.n_embd;
    if (n == 0 || rows.size() % hp.n_embd != 0 || n > scratch_.max_batch ||
        n > std::max<std::uint32_t>(cache.max_append(), 1)) {
        co_return make_error(std::errc::invalid_argument, "forward_rows: " + std::to_string(rows.size()) +
                                                              " floats are not 1 to one batch of rows of " +
                                                              std::to_string(hp.n_embd));
    }
    row_tokens_.assign(n, 0);
    if (auto ok = check(cache, row_tokens_); !ok) {
        co_return ok;
    }
    logits.resize((mode == logits_mode::all ? n : 1) * std::size_t{hp.n_vocab});
    const auto executor = co_await boost::asio::this_coro::executor;
    scratch_.moe.fetch.bind(executor);
    scratch_.moe.prediction.bind(executor);
    scratch_.moe.prediction2.bind(executor);
    experts_->attach(executor);
    const detach_guard guard{experts_, &scratch_};
    const auto count = static_cast<std::uint32_t>(n);
    const logits_request req = mode == logits_mode::all ? logits_request{0, count, logits.data()}
                                                        : logits_request{count - 1, 1, logits.data()};
    const batch_segment seg{&cache, cache.size(), 0, count};
    co_return co_await run_batch(row_tokens_, std::span(&seg, 1), std::span(&req, 1), 0, nullptr, rows.data());
}

boost::asio::awaitable<result<void>> forward_runner::forward_step(std::span<const sequence_step> steps,
                                                                  std::uint32_t prediction_limit, yield_hook* yield) {
    step_tokens_.clear();
    step_segments_.clear();
    step_logits_.clear();
    for (const auto& st : steps) {
        if (auto ok = check(*st.cache, st.tokens); !ok) {
            co_return ok;
        }
        if (st.tokens.size() > std::max<std::uint32_t>(st.cache->max_append(), 1)) {
            co_return make_error(std::errc::invalid_argument, "a sequence's step exceeds its cache's batch");
        }
        const auto row = static_cast<std::uint32_t>(step_tokens_.size());
        step_segments_.push_back({st.cache, st.cache->size(), row, static_cast<std::uint32_t>(st.tokens.size())});
        step_tokens_.insert(step_tokens_.end(), st.tokens.begin(), st.tokens.end());
        step_logits_.push_back({row + st.logits_first, st.logits_count, st.logits});
    }
    if (step_tokens_.empty() || step_tokens_.size() > scratch_.max_batch) {
        co_return make_error(std::errc::invalid_argument, "a step of " + std::to_string(step_tokens_.size()) +
                                                              " tokens; the batch holds 1 to " +
                                                              std::to_string(scratch_.max_batch));
    }
    const auto executor = co_await boost::asio::this_coro::executor;
    scratch_.moe.fetch.bind(executor);
    scratch_.moe.prediction.bind(executor);
    scratch_.moe.prediction2.bind(executor);
    experts_->attach(executor);
    const detach_guard guard{experts_, &scratch_};
    co_return co_await run_batch(step_tokens_, step_segments_, step_logits_, prediction_limit,
                                 routing_.log != nullptr ? nullptr : yield);
}

boost::asio::awaitable<result<void>> forward_runner::run_batch(std::span<const std::int32_t> tokens,
                                                               std::span<const batch_segment> segments,
                                                               std::span<const logits_request> logits,
                                                               std::uint32_t prediction_limit, yield_hook* yield,
                                                               const float* input_rows) {
    const auto& hp = *hp_;
    const auto& emb = weights_->token_embd;
    const std::size_t n_tok = tokens.size();
    layer_context ctx(hp, *weights_, *pool_, *experts_, *segments.front().cache, scratch_);
    ctx.n_tokens = static_cast<std::uint32_t>(n_tok);
    ctx.first_pos = segments.front().first_pos;
    ctx.segments = segments;
    ctx.prediction_limit = prediction_limit;
    // The routing log follows one sequence: it records or replays single-sequence batches only.
    const bool logged = routing_.log != nullptr && segments.size() == 1;
    if (logged) {
        routing_.log->begin(routing_, ctx.first_pos, ctx.n_tokens);
        ctx.routing = &routing_;
    }
    std::size_t wanted = 0;
    for (const auto& l : logits) {
        wanted += l.count;
    }
    if (logits.size() > 1 && wanted != 0) {
        gathered_logits_.resize(wanted * std::size_t{hp.n_vocab});
    }
    // The whole batch is one team job; it stops early when a layer stalls on its experts (the runner awaits the
    // fetch, then a new job resumes that layer and goes on) or, with a yield hook that wants to run, between two
    // layers (the runner awaits the hook, then a new job starts at the next layer).
    std::optional<layer_stall> resume_at;
    std::uint32_t start_layer = 0; // after a yield: the layer to go on with
    bool yield_now = false;        // member 0's reading of the hook, for every member after a barrier
    while (true) {
        std::optional<layer_stall> stalled;
        std::optional<std::uint32_t> yielded;
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
            } else if (start_layer > 0) {
                il = start_layer;
            } else {
                const runtime::slice tok(n_tok, t, n);
                for (std::size_t i = tok.begin; i < tok.end; ++i) {
                    if (input_rows != nullptr) {
                        std::copy_n(input_rows + i * hp.n_embd, hp.n_embd, scratch_.x.data() + i * hp.n_embd);
                        continue;
                    }
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
                if (yield != nullptr && il + 1 < hp.n_layer) {
                    if (m.index == 0) {
                        yield_now = yield->wanted();
                    }
                    m.sync(); // every member reads member 0's answer (it writes again only after the next layer)
                    if (yield_now) {
                        if (m.index == 0) {
                            yielded = il + 1;
                        }
                        return;
                    }
                }
            }
            if (wanted != 0) {
                output_logits(logits, wanted, m);
            }
        });
        if (yielded) {
            co_await yield->run();
            resume_at.reset();
            start_layer = *yielded;
            continue;
        }
        if (!stalled) {
            break;
        }
        const auto wait_start = std::chrono::steady_clock::now();
        auto waited = co_await stalled->fetch->wait_progress();
        expert_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
        if (!waited) {
            co_return waited.error().with_context("layer " + std::to_string(stalled->layer) + " experts");
        }
        resume_at = stalled;
    }
    for (const auto& seg : segments) {
        if (seg.cache->keeps_hidden() && seg.cache->hidden_width() == hp.n_embd) {
            // The residual stream after the last layer (output_logits normalised a copy of it).
            std::copy_n(scratch_.x.data() + std::size_t{seg.row} * hp.n_embd, std::size_t{seg.n_tokens} * hp.n_embd,
                        seg.cache->hidden_row(seg.first_pos));
        }
        seg.cache->advance(seg.n_tokens);
    }
    if (logits.size() > 1 && wanted != 0) {
        const float* from = gathered_logits_.data();
        for (const auto& l : logits) {
            std::copy_n(from, std::size_t{l.count} * hp.n_vocab, l.out);
            from += std::size_t{l.count} * hp.n_vocab;
        }
    }
    experts_->count_tokens(n_tok);
    if (logged) {
        if (auto r = routing_.log->end(routing_); !r) {
            co_return r.error();
        }
    }
    co_return result<void>{};
}

void forward_runner::output_logits(std::span<const logits_request> reqs, std::size_t total, const team_member& m) {
    const std::size_t t = m.index, n = m.count;
    const auto& hp = *hp_;
    const auto& w = *weights_;
    auto& s = scratch_;
    const auto in = detail::plan_input(s.block_in, {w.output.type}, hp.n_embd, total);
    // The wanted rows, gathered in order into xn's first `total` rows.
    const runtime::slice rows(total, t, n);
    std::size_t j = 0;
    for (const auto& req : reqs) {
        for (std::size_t i = 0; i < req.count; ++i, ++j) {
            if (j >= rows.begin && j < rows.end) {
                kernels::rms_norm(s.x.data() + (req.first + i) * hp.n_embd, w.output_norm.f32(),
                                  s.xn.data() + j * hp.n_embd, hp.n_embd, hp.rms_eps);
            }
        }
    }
    detail::prepare_rows(in, s.xn.data(), rows);
    m.sync();
    float* out = reqs.size() == 1 ? reqs.front().out : gathered_logits_.data();
    detail::matmul_share(w.output, in, total, out, hp.n_vocab, t, n);
}

} // namespace sluice::models
