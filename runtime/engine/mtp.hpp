// Multi-token prediction (MTP, "NextN") drafting: the block some models carry after their main stack (GLM-4.5+:
// blk.<n_layer>.nextn.*) predicts the token after next from the model's last hidden state and the next token. The
// block is one decoder layer whose input is eh_proj · [enorm(embed(token)); hnorm(hidden)] and whose output goes
// through its own norm (shared_head_norm) and head (shared_head_head, else the model's output). Drafts longer than
// one chain the block on its own output hidden state.
#pragma once

#include "runtime/compute/compute_pool.hpp"
#include "runtime/experts/expert_source.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/models/forward.hpp"
#include "runtime/models/hparams.hpp"
#include "runtime/models/kv_cache.hpp"
#include "runtime/models/weights.hpp"
#include "sluice/error.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace sluice::speculation {

/// A model's first MTP block set up as a one-layer model of its own: hyperparameters with one layer, weights whose
/// layer 0 is the block (its routed experts resident: model_weights::load with nextn_experts), the token embedding,
/// and the block's head. Read-only once made; shared by every session of the model.
class mtp_block {
public:
    /// Errors: `hp` has no MTP block, the block lacks eh_proj / enorm / hnorm, or its experts were left on disk.
    static result<std::unique_ptr<mtp_block>> create(const models::architecture& arch, const models::model_hparams& hp,
                                                     const models::model_weights& w);
    mtp_block(const mtp_block&) = delete;
    mtp_block& operator=(const mtp_block&) = delete;

    [[nodiscard]] const models::architecture& arch() const noexcept { return *arch_; }
    [[nodiscard]] const models::model_hparams& hparams() const noexcept { return hp_; }
    [[nodiscard]] const models::model_weights& weights() const noexcept { return weights_; }
    [[nodiscard]] experts::expert_source& experts() noexcept { return experts_; }
    /// The block's own tensors (eh_proj, enorm, hnorm).
    [[nodiscard]] const models::hybrid_layer_weights& nextn() const noexcept { return weights_.layers[0].hybrid; }
    /// The embedding of the token input: the block's own when it has one, else the model's.
    [[nodiscard]] const models::weight_view& embedding() const noexcept { return embedding_; }

private:
    mtp_block(const models::architecture& arch, const models::model_hparams& hp, const models::model_weights& w);

    const models::architecture* arch_;
    models::model_hparams hp_;
    models::model_weights weights_; ///< views into the target's weights (no arenas of its own)
    models::weight_view embedding_;
    experts::resident_experts experts_;
};

/// One sequence's MTP drafting, following a target session whose cache keeps hidden states (kv_cache::keep_hidden).
/// The block's own cache holds, at row j, the pair (target hidden state at j, token j + 1). Not thread-safe: one
/// per session.
class mtp_runner {
public:
    /// `block` outlives the runner; `pool` is the target's; `n_ctx` and `n_batch` as the target session's.
    mtp_runner(mtp_block& block, runtime::compute_pool& pool, std::uint32_t n_ctx, std::uint32_t n_batch,
               kernels::quant_type kv_type);

    /// Drafts up to `k` tokens greedily after `context` (the target's tokens: those in `target` and one more, not
    /// yet in it) into `out`: first catching up on the rows it has not seen, then chaining the block on its own
    /// output. Fewer when the context is full; none when `target` is empty. Errors: a forward pass of the block
    /// failed (its sequence starts over next time).
    boost::asio::awaitable<result<void>> propose(std::span<const std::int32_t> context, const models::kv_cache& target,
                                                 std::uint32_t k, std::vector<std::int32_t>& out);

    /// Of the last propose(), the milliseconds spent catching up on the target's new rows when they were more than
    /// a step's worth (k + 1: a new prompt, or a stretch decoded without drafting); 0 otherwise.
    [[nodiscard]] double catch_up_ms() const noexcept { return catch_up_ms_; }

private:
    /// Writes the block's input rows eh_proj · [enorm(embed(tokens[i])); hnorm(hidden[i])] to rows_ (on the pool).
    boost::asio::awaitable<void> project(std::span<const std::int32_t> tokens, std::span<const float* const> hidden);
    /// Runs the block on rows_ (its first `n` rows) and leaves the last row's logits in logits_.
    boost::asio::awaitable<result<void>> run_rows(std::size_t n);

    mtp_block* block_;
    runtime::compute_pool* pool_;
    std::uint32_t max_rows_;
    models::kv_cache cache_;
    models::forward_runner runner_;
    std::vector<std::int32_t> seen_; ///< the context the rows in cache_ were built from (its first rows + 1 tokens)
    std::vector<float> concat_;      ///< [max_rows][2 * n_embd]: normalised embedding, then normalised hidden state
    std::vector<float> rows_;        ///< [max_rows][n_embd]: the block's input
    models::prepared_slots prepared_;
    std::vector<const float*> hidden_;
    std::vector<std::int32_t> tokens_;
    std::vector<float> logits_;
    double catch_up_ms_ = 0.0;
};

} // namespace sluice::speculation
