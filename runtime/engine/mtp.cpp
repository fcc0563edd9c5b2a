// Multi-token prediction drafting: the MTP block as a one-layer model, its input projection on the compute pool,
// and a session's drafting sequence (catch-up on the target's hidden states, then chained drafts).
#include "runtime/engine/mtp.hpp"

#include "kernels/matmul.hpp"
#include "kernels/ops.hpp"
#include "kernels/quant.hpp"
#include "runtime/compute/team.hpp"
#include "runtime/engine/speculative.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/blocks_util.hpp"

#include <algorithm>
#include <chrono>

namespace sluice::speculation {

namespace {

/// The target's hyperparameters reduced to its first MTP block as layer 0.
models::model_hparams block_hparams(const models::model_hparams& hp, const models::layer_weights& l) {
    auto out = hp;
    out.n_layer = 1;
    out.hybrid.nextn_layers = 0;
    out.routing.leading_dense = l.router ? 0 : 1; // a MoE block routes at layer 0
    return out;
}

} // namespace

mtp_block::mtp_block(const models::architecture& arch, const models::model_hparams& hp, const models::model_weights& w)
    : arch_(&arch), hp_(block_hparams(hp, w.nextn.front())), experts_(weights_) {
    const auto& l = w.nextn.front();
    weights_.token_embd = w.token_embd;
    weights_.output_norm = l.hybrid.shared_head_norm ? l.hybrid.shared_head_norm : w.output_norm;
    weights_.output = l.hybrid.shared_head_head ? l.hybrid.shared_head_head : w.output;
    weights_.layers.push_back(l);
    embedding_ = l.hybrid.embed_tokens ? l.hybrid.embed_tokens : w.token_embd;
}

result<std::unique_ptr<mtp_block>> mtp_block::create(const models::architecture& arch, const models::model_hparams& hp,
                                                     const models::model_weights& w) {
    if (hp.hybrid.nextn_layers == 0 || w.nextn.empty()) {
        return make_error(std::errc::invalid_argument,
                          "the model has no multi-token prediction (MTP / NextN) layers (" + hp.arch +
                              ".nextn_predict_layers is 0 or absent)");
    }
    const auto& l = w.nextn.front();
    const std::string where = "MTP block blk." + std::to_string(hp.n_layer);
    if (!l.hybrid.eh_proj || !l.hybrid.enorm || !l.hybrid.hnorm) {
        return make_error(std::errc::invalid_argument, where + ": lacks nextn.eh_proj, nextn.enorm or nextn.hnorm");
    }
    if (l.hybrid.eh_proj.cols != 2ull * hp.n_embd || l.hybrid.eh_proj.rows != hp.n_embd) {
        return make_error(std::errc::invalid_argument, where + ": nextn.eh_proj is not [2 * n_embd, n_embd]");
    }
    if (l.router && (l.gate_exps.data == nullptr || l.up_exps.data == nullptr || l.down_exps.data == nullptr)) {
        return make_error(std::errc::invalid_argument, where + ": its routed experts were not loaded");
    }
    return std::unique_ptr<mtp_block>(new mtp_block(arch, hp, w));
}

mtp_runner::mtp_runner(mtp_block& block, runtime::compute_pool& pool, std::uint32_t n_ctx, std::uint32_t n_batch,
                       kernels::quant_type kv_type)
    : block_(&block), pool_(&pool), max_rows_(std::max(1u, n_batch)),
      cache_(models::cache_layout_of(block.arch(), block.hparams()), n_ctx, kv_type, max_rows_),
      runner_(block.arch(), block.hparams(), block.weights(), pool, block.experts(), max_rows_) {
    const auto& hp = block.hparams();
    cache_.keep_hidden(hp.n_embd);
    concat_.resize(std::size_t{max_rows_} * 2 * hp.n_embd);
    rows_.resize(std::size_t{max_rows_} * hp.n_embd);
    const std::size_t padded = (2 * std::size_t{hp.n_embd} + 255) / 256 * 256;
    const auto type = block.nextn().eh_proj.type;
    prepared_.by_type.assign(1, std::vector<std::byte>(kernels::prepared_row_bytes(type, padded) * max_rows_));
}

boost::asio::awaitable<void> mtp_runner::project(std::span<const std::int32_t> tokens,
                                                 std::span<const float* const> hidden) {
    const auto& hp = block_->hparams();
    const auto& nx = block_->nextn();
    const auto& emb = block_->embedding();
    const std::size_t n = tokens.size();
    const std::size_t d = hp.n_embd;
    co_await runtime::run_team(*pool_, [&](std::size_t t, std::size_t members, runtime::team_barrier& b) {
        const models::team_member m{t, members, b};
        const runtime::slice r(n, t, members);
        for (std::size_t i = r.begin; i < r.end; ++i) {
            float* e = concat_.data() + i * 2 * d;
            float* h = e + d;
            // The embedding into the second half as scratch, normalised into the first; then the hidden state.
            kernels::dequantize_row(emb.type, emb.data + static_cast<std::size_t>(tokens[i]) * emb.row_bytes, h, d);
            kernels::rms_norm(h, nx.enorm.f32(), e, d, hp.rms_eps);
            kernels::rms_norm(hidden[i], nx.hnorm.f32(), h, d, hp.rms_eps);
        }
        const auto in = models::detail::plan_input(prepared_, {nx.eh_proj.type}, 2 * d, n);
        models::detail::prepare_rows(in, concat_.data(), r);
        m.sync();
        models::detail::matmul_share(nx.eh_proj, in, n, rows_.data(), d, t, members);
    });
}

boost::asio::awaitable<result<void>> mtp_runner::run_rows(std::size_t n) {
    const auto d = block_->hparams().n_embd;
    co_return co_await runner_.forward_rows(cache_, std::span<const float>(rows_.data(), n * d),
                                            models::logits_mode::last, logits_);
}

boost::asio::awaitable<result<void>> mtp_runner::propose(std::span<const std::int32_t> context,
                                                         const models::kv_cache& target, std::uint32_t k,
                                                         std::vector<std::int32_t>& out) {
    out.clear();
    catch_up_ms_ = 0.0;
    const std::uint32_t n = target.size(); // rows 0 .. n - 1 pair the target's hidden state j with token j + 1
    if (k == 0 || n == 0 || context.size() != std::size_t{n} + 1 || !target.keeps_hidden()) {
        co_return result<void>{};
    }
    if (std::size_t{n} + k > cache_.capacity()) {
        co_return result<void>{}; // no room to draft: the target decodes plainly
    }
    // Keep the rows built from the same context (row j needs tokens 0 .. j + 1), always recomputing the last.
    std::size_t same = 0;
    while (same < seen_.size() && same < context.size() && seen_[same] == context[same]) {
        ++same;
    }
    std::uint32_t keep = same > 0 ? static_cast<std::uint32_t>(same - 1) : 0;
    keep = std::min({keep, n - 1, cache_.size()});
    cache_.truncate(keep);
    seen_.assign(context.begin(), context.begin() + keep + (keep > 0 ? 1 : 0));
    auto fail = [this](result<void> r) {
        cache_.truncate(0);
        seen_.clear();
        return r;
    };
    const auto t0 = std::chrono::steady_clock::now();
    const auto step = std::min(max_rows_, std::max(1u, cache_.max_append()));
    for (std::uint32_t j = keep; j < n;) {
        const std::uint32_t count = std::min(step, n - j);
        tokens_.assign(context.begin() + j + 1, context.begin() + j + 1 + count);
        hidden_.resize(count);
        for (std::uint32_t i = 0; i < count; ++i) {
            hidden_[i] = target.hidden_row(j + i);
        }
        co_await project(tokens_, hidden_);
        if (auto r = co_await run_rows(count); !r) {
            co_return fail(r);
        }
        j += count;
    }
    seen_.assign(context.begin(), context.end());
    // A step's own rows (the accepted drafts and the token after them) are drafting's cost; a longer catch-up
    // (a new prompt, a stretch decoded without drafting) is paid once and reported apart.
    if (n - keep > k + 1) {
        catch_up_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    // Chain: each draft goes in with the block's own output hidden state of the row before it.
    for (std::uint32_t i = 0; i < k; ++i) {
        const std::int32_t token = argmax_token(logits_);
        if (token < 0) {
            break;
        }
        out.push_back(token);
        if (i + 1 == k) {
            break;
        }
        tokens_.assign(1, token);
        hidden_.assign(1, cache_.hidden_row(cache_.size() - 1));
        co_await project(tokens_, hidden_);
        if (auto r = co_await run_rows(1); !r) {
            co_return fail(r);
        }
    }
    cache_.truncate(n); // the chained rows were built from the block's hidden states, not the target's
    co_return result<void>{};
}

} // namespace sluice::speculation
