// The forward pass: token ids in, logits out, layer by layer through the architecture's hooks, with the
// arithmetic on the compute pool and expert weights reached through an expert_source. A layer step returns a
// status: done, or stalled on an expert fetch; the runner awaits the fetch and resumes the layer.
#pragma once

#include "runtime/compute/compute_pool.hpp"
#include "runtime/experts/expert_batch.hpp"
#include "runtime/experts/expert_source.hpp"
#include "runtime/experts/routing_log.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/models/kv_cache.hpp"
#include "runtime/models/weights.hpp"
#include "sluice/error.hpp"

#include <boost/asio/awaitable.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace sluice::models {

class layer_context;
struct team_member;

/// The rest of a stalled layer, run by every team member once its fetch has progressed.
using layer_resume = layer_status (*)(layer_context& ctx, std::uint32_t layer, const team_member& m);

/// A layer step that cannot go on: experts it computes are still being read.
struct layer_stall {
    std::uint32_t layer = 0;
    experts::expert_batch* fetch = nullptr; ///< what it waits for
    layer_resume resume = nullptr;          ///< continues the layer where it stopped
};

/// What a layer step ended with.
struct layer_status {
    std::optional<layer_stall> stall; ///< set when the layer stopped to wait for its experts

    [[nodiscard]] bool done() const noexcept { return !stall; }
    static layer_status finished() noexcept { return {}; }
    static layer_status stalled(layer_stall s) noexcept { return {s}; }
};

/// Buffers for one input prepared for the weight types that multiply it (one buffer per distinct type).
struct prepared_slots {
    std::vector<std::vector<std::byte>> by_type;
};

/// Working memory of a forward pass for batches of up to `max_batch` tokens.
struct forward_scratch {
    forward_scratch(const model_hparams& hp, std::uint32_t max_batch);
    std::uint32_t max_batch;
    std::vector<float> x;              ///< residual stream [batch][n_embd]
    std::vector<float> xn;             ///< normalised input of the current block [batch][n_embd]
    std::vector<float> q, k, v;        ///< projections [batch][q_dim | kv_dim | v_dim]
    std::vector<float> attn;           ///< attention output [batch][n_head * head_dim_v]
    std::vector<float> tmp;            ///< block output before the residual add [batch][n_embd]
    std::vector<float> gate, up;       ///< FFN hidden [batch * max(k, 1)][max ff]
    std::vector<float> moe_out;        ///< each selection's expert output [batch * k][n_embd]
    std::vector<float> sh_gate, sh_up; ///< shared-expert hidden [batch][n_ff_shexp]
    std::vector<float> router;         ///< router logits [batch][n_expert]
    std::vector<float> weights;        ///< chosen expert weights [batch][k]
    std::vector<std::int32_t> ids;     ///< chosen experts [batch][k]
    std::vector<std::int32_t> sel_token; ///< selection -> token
    std::vector<float> pred_xn;        ///< next-layer prediction: normalised input [batch][n_embd]
    std::vector<float> pred_router;    ///< its router logits [batch][n_expert]
    std::vector<std::int32_t> pred_ids; ///< its chosen experts [batch][k]
    std::vector<float> pred_weights;   ///< (unused weights of the choice) [batch][k]
    std::vector<std::int32_t> pred_unique; ///< the distinct predicted experts
    std::vector<std::pair<std::int32_t, std::int32_t>> pred_votes; ///< (minus votes, expert) when over the limit
    std::vector<std::int32_t> pred2_ids;                           ///< the prediction two MoE layers ahead [batch][k]
    std::vector<std::int32_t> pred2_unique;                        ///< its distinct experts

    /// Prepared activations, named by what they hold.
    prepared_slots block_in;      ///< a block's normalised input [batch][n_embd]: q/k/v, FFN and expert gate/up,
                                  ///< router, shared expert, output head (up to 4 weight types at once)
    prepared_slots wide_in;       ///< a wide row per token or selection: attention output [batch][n_head *
                                  ///< head_dim_v], FFN hidden [batch][n_ff], expert hidden [batch * k][n_ff_exp]
    prepared_slots shared_in;     ///< the shared expert's hidden [batch][n_ff_shexp]
    prepared_slots prediction_in; ///< the next MoE layer's router input [batch][n_embd]

    /// The MoE layer in progress (member 0 writes between barriers; every member reads after them).
    struct moe_step {
        std::vector<std::int32_t> unique_ids;   ///< distinct experts chosen in the layer (sorted)
        std::vector<std::int32_t> unique_index; ///< expert id -> its index in unique_ids
        std::vector<std::uint8_t> in_chunk;     ///< per unique expert: computed by the chunk in progress
        experts::expert_batch fetch;            ///< the layer's chosen experts
        experts::expert_batch prediction;       ///< the next MoE layer's predicted experts
        experts::expert_batch prediction2;      ///< the predicted experts of the MoE layer after it (depth 2)
        /// Expert id -> weight pointers of the experts in the chunk, per part (what matmul_experts reads).
        std::array<std::vector<const void*>, experts::max_expert_parts> parts;
        std::vector<std::int32_t> chunk_expert; ///< selections computed in the current chunk: expert,
        std::vector<std::int32_t> chunk_token;  ///< token,
        std::vector<std::int32_t> chunk_row;    ///< and row (the selection's index)
        std::uint32_t chunk_size = 0;           ///< selections in the chunk
        bool waiting = false;                   ///< chosen experts not computed yet and not ready
    } moe;

    /// The Gated DeltaNet hybrids' layer buffers (empty for other models).
    struct hybrid_step {
        std::vector<float> qkv;   ///< fused q/k/v projection [batch][conv channels]
        std::vector<float> conv;  ///< after the causal convolution, q and k then L2-normalised [batch][channels]
        std::vector<float> z;     ///< output gate [batch][inner]
        std::vector<float> ab;    ///< decay and strength projections [batch][2 * value heads]
        std::vector<float> g;     ///< log decays [batch][value heads]
        std::vector<float> beta;  ///< update strengths [batch][value heads]
        std::vector<float> out;   ///< delta-rule output, then its gated norm [batch][inner]
        std::vector<float> qg;    ///< gated attention's query-and-gate projection [batch][2 * q_dim]
        std::vector<float> gate;  ///< its gate [batch][q_dim]
    } hybrid;

    /// Multi-head latent attention's layer buffers (deepseek2; empty for other models). The absorbed form's queries
    /// go into `q` ([batch][n_head][kv_lora_rank + rope dims]: head_dim is that in MLA's GGUF view) and its latent
    /// outputs into `attn` ([batch][n_head][kv_lora_rank]).
    struct mla_step {
        std::vector<float> q_a;    ///< low-rank query [batch][q_lora_rank]
        std::vector<float> kv_a;   ///< latent and rotary key [batch][kv_lora_rank + rope dims]
        std::vector<float> q;      ///< per-head queries [batch][n_head][nope + rope dims]
        std::vector<float> k_nope; ///< plain form: decompressed keys [batch positions][n_head][nope dims]
        std::vector<float> v;      ///< plain form: decompressed values [batch positions][n_head][v dims]
        std::vector<float> out;    ///< attention output [batch][n_head * v dims]
    } mla;
    prepared_slots mla_head_in; ///< MLA: one row per head of the token in progress (its nope query or latent output)

    /// Sizes the prepared-activation buffers for every weight type `w` uses and the expert handles, so
    /// compute threads never allocate.
    void size_for(const model_hparams& hp, const model_weights& w);
};

/// One sequence's rows in a batch: tokens [row, row + n_tokens) of the batch go into `cache` from `first_pos` on.
/// A batch of several sequences concatenates their rows; only the blocks that touch a cache (attention, recurrent
/// state) look at segments, everything else works on all rows at once.
struct batch_segment {
    kv_cache* cache = nullptr;
    std::uint32_t first_pos = 0; ///< cache position of the segment's first token
    std::uint32_t row = 0;       ///< its first row in the batch
    std::uint32_t n_tokens = 0;
};

/// The batch a layer step works on and what it reaches. Blocks read and write `x` in place.
class layer_context {
public:
    layer_context(const model_hparams& hp, const model_weights& w, runtime::compute_pool& pool,
                  experts::expert_source& experts, kv_cache& cache, forward_scratch& s) noexcept
        : hp_(&hp), weights_(&w), pool_(&pool), experts_(&experts), cache_(&cache), scratch_(&s) {}

    [[nodiscard]] const model_hparams& hparams() const noexcept { return *hp_; }
    [[nodiscard]] const layer_weights& layer(std::uint32_t il) const noexcept { return weights_->layers[il]; }
    [[nodiscard]] runtime::compute_pool& pool() const noexcept { return *pool_; }
    [[nodiscard]] experts::expert_source& experts() const noexcept { return *experts_; }
    [[nodiscard]] kv_cache& cache() const noexcept { return *cache_; }
    [[nodiscard]] forward_scratch& scratch() const noexcept { return *scratch_; }

    std::uint32_t n_tokens = 0;  ///< tokens in this batch (rows of every segment)
    std::uint32_t first_pos = 0; ///< cache position of the batch's first token (single-segment batches)
    experts::routing_batch* routing = nullptr; ///< routing recorded or replayed (see routing_log), when set
    std::span<const batch_segment> segments; ///< the sequences of the batch, in row order (at least one)
    /// At most this many distinct experts are prefetched for the next layer (the most chosen of the predictions
    /// of all tokens); 0: no limit.
    std::uint32_t prediction_limit = 0;

    /// The segment holding row `i`.
    [[nodiscard]] const batch_segment& segment_of(std::size_t i) const noexcept {
        std::size_t lo = 0;
        for (std::size_t j = 1; j < segments.size() && segments[j].row <= i; ++j) {
            lo = j;
        }
        return segments[lo];
    }

private:
    const model_hparams* hp_;
    const model_weights* weights_;
    runtime::compute_pool* pool_;
    experts::expert_source* experts_;
    kv_cache* cache_;
    forward_scratch* scratch_;
};

/// Lets a long forward step step aside between layers for more urgent work (a new prompt's prefill on another
/// runner): `wanted` is asked by one compute thread after each layer but the last; when it says yes, the step's
/// compute stops at that layer boundary, the runner awaits `run` on its executor, then goes on with the next layer.
class yield_hook {
public:
    virtual ~yield_hook() = default;
    /// Compute thread, cheap (an atomic load): whether `run` has something to do.
    [[nodiscard]] virtual bool wanted() const noexcept = 0;
    /// On the runner's executor, between two layers of its step (no team job of the step is running).
    virtual boost::asio::awaitable<void> run() = 0;
};

/// Which logits a forward call produces.
enum class logits_mode {
    last, ///< the last token's (decode, end of prefill)
    all,  ///< every token's, [n_tokens][n_vocab] (scoring, tests)
};

/// Runs a model's forward pass. One call at a time per runner (it owns the scratch memory); many runners may
/// share one model and pool.
class forward_runner {
public:
    forward_runner(const architecture& arch, const model_hparams& hp, const model_weights& w,
                   runtime::compute_pool& pool, experts::expert_source& experts, std::uint32_t max_batch = 256);

    /// Appends `tokens` to `cache` (in batches of max_batch), writing the logits `mode` asks for into
    /// `logits` (resized). Errors: a token id outside the vocabulary, no room left in the cache (nothing is
    /// appended then), or an expert read failure.
    boost::asio::awaitable<result<void>> forward(kv_cache& cache, std::span<const std::int32_t> tokens,
                                                 logits_mode mode, std::vector<float>& logits);
    /// As forward(), with the first layer's input rows given ([n][n_embd], n at most max_batch()) instead of the
    /// token embeddings: a multi-token-prediction block's projected input.
    boost::asio::awaitable<result<void>> forward_rows(kv_cache& cache, std::span<const float> rows, logits_mode mode,
                                                      std::vector<float>& logits);

    [[nodiscard]] const model_hparams& hparams() const noexcept { return *hp_; }
    [[nodiscard]] const architecture& arch() const noexcept { return *arch_; }
    /// Records this runner's routing into `log`, or replays it from there (nullptr: the router decides, nothing
    /// is recorded). Call before the first forward; `log` must outlive the runner.
    void set_routing(experts::routing_log* log);

    /// One sequence's part of a step: `tokens` appended to `cache`, the logits of its tokens [logits_first,
    /// logits_first + logits_count) written to `logits` ([count][n_vocab]; count 0: none).
    struct sequence_step {
        kv_cache* cache = nullptr;
        std::span<const std::int32_t> tokens;
        std::uint32_t logits_first = 0;
        std::uint32_t logits_count = 0;
        float* logits = nullptr;
    };
    /// Runs the tokens of several sequences as one batch: every matmul, the router and the experts (each distinct
    /// expert fetched once) run over the rows of all of them; attention and recurrent state per sequence. The
    /// tokens together fit max_batch(), each sequence's fit its cache's max_append() and room (check()); the caches
    /// are distinct. `prediction_limit` caps the next layer's prefetch (0: none). With `yield`, the step stops
    /// between layers whenever it wants to run (see yield_hook). Error: an expert read failure (no cache advances
    /// then).
    boost::asio::awaitable<result<void>> forward_step(std::span<const sequence_step> steps,
                                                      std::uint32_t prediction_limit = 0, yield_hook* yield = nullptr);
    /// Whether `tokens` may be appended to `cache`: ids in the vocabulary, not empty, room left.
    [[nodiscard]] result<void> check(const kv_cache& cache, std::span<const std::int32_t> tokens) const;
    [[nodiscard]] std::uint32_t max_batch() const noexcept { return scratch_.max_batch; }
    /// Seconds this runner's passes have stalled on expert reads since it was made (the runner's own thread).
    [[nodiscard]] double expert_wait_seconds() const noexcept { return expert_wait_s_; }

private:
    /// Rows of the batch whose logits a batch writes, and where.
    struct logits_request {
        std::uint32_t first = 0;
        std::uint32_t count = 0; ///< 0: none
        float* out = nullptr;
    };
    boost::asio::awaitable<result<void>> run_batch(std::span<const std::int32_t> tokens,
                                                   std::span<const batch_segment> segments,
                                                   std::span<const logits_request> logits,
                                                   std::uint32_t prediction_limit, yield_hook* yield,
                                                   const float* input_rows = nullptr);
    void output_logits(std::span<const logits_request> reqs, std::size_t total, const team_member& m);

    const architecture* arch_;
    const model_hparams* hp_;
    const model_weights* weights_;
    runtime::compute_pool* pool_;
    experts::expert_source* experts_;
    forward_scratch scratch_;
    experts::routing_batch routing_;
    std::vector<std::int32_t> step_tokens_;   ///< forward_step: the rows' tokens
    std::vector<batch_segment> step_segments_; ///< and their sequences
    std::vector<logits_request> step_logits_;
    std::vector<float> gathered_logits_;        ///< several sequences' logits rows before they are handed out
    std::vector<std::int32_t> row_tokens_;      ///< forward_rows: placeholder ids of its rows (never looked up)
    double expert_wait_s_ = 0;                  ///< see expert_wait_seconds
};

} // namespace sluice::models
