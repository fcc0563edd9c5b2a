// Speculative decoding: drafting (prompt lookup, a draft model), verifying the drafts in one forward pass of the
// target with the exact acceptance rule, and choosing each step's draft length from measured costs.
#pragma once

#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/generate/sampler.hpp"
#include "runtime/models/forward.hpp"
#include "runtime/models/kv_cache.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace sluice::speculation {

/// What a model's generations counted (monotonic; relaxed atomics, any thread).
struct counters {
    std::atomic<std::uint64_t> verify_steps{0};        ///< forward passes that verified drafted tokens
    std::atomic<std::uint64_t> drafted{0};             ///< tokens drafted and verified
    std::atomic<std::uint64_t> accepted{0};            ///< drafted tokens the target accepted
    std::atomic<std::uint64_t> verify_tokens{0};       ///< tokens those passes produced (accepted + 1 each)
    std::atomic<std::uint64_t> verify_expert_reads{0}; ///< experts read from disk during those passes
    std::atomic<std::uint64_t> plain_tokens{0};        ///< tokens of ordinary one-token decode steps
    std::atomic<std::uint64_t> plain_expert_reads{0};  ///< experts read from disk during those steps
};

/// Prompt lookup: finds the latest earlier occurrence of the last n tokens of `history` (n from `max_ngram` down
/// to `min_ngram`) and writes the `k` tokens that followed it to `out` (cleared; empty when nothing matches). The
/// copy runs on through the tail and the drafts already written, as if the history repeated from the match: a
/// loop of period p behind the tail drafts k tokens of that loop, not only the p before the tail.
void lookup_draft(std::span<const std::int32_t> history, std::uint32_t k, std::vector<std::int32_t>& out,
                  std::uint32_t min_ngram = 2, std::uint32_t max_ngram = 4);

/// The smallest id of the largest finite logit (greedy choice; -1 when every logit is -inf or NaN).
std::int32_t argmax_token(std::span<const float> logits) noexcept;

/// A draft model's own sequence, following a target session's tokens. Not thread-safe: one per session.
class draft_runner {
public:
    /// `draft` must be attention-only (its cache can be cut back); `n_ctx` as the target session's.
    draft_runner(std::shared_ptr<model> draft, std::uint32_t n_ctx);

    /// Drafts up to `k` tokens greedily after `context` (every token of the target's sequence, the last one
    /// not yet in the target's cache either) into `out`; fewer when the context is full. Errors: the draft's
    /// forward pass failed (its sequence starts over next time).
    boost::asio::awaitable<result<void>> propose(std::span<const std::int32_t> context, std::uint32_t k,
                                                 std::vector<std::int32_t>& out);

    /// Brings the draft's sequence to `context` (keeping the common prefix), so that the next propose() after
    /// `context` and one more token runs only that token: a session calls it after the prompt. Errors as propose().
    boost::asio::awaitable<result<void>> catch_up(std::span<const std::int32_t> context);

    /// Of the last propose(), the milliseconds spent catching up on the context (the tokens the draft had not
    /// seen: a new prompt, or what was decoded while drafting was off), apart from drafting itself.
    [[nodiscard]] double catch_up_ms() const noexcept { return catch_up_ms_; }
    /// Of the last propose(), how many tokens that catch-up ran: 1 or 2 in a run of drafting steps (the last
    /// step's final tokens), more after a new prompt or a stretch without drafting.
    [[nodiscard]] std::size_t catch_up_tokens() const noexcept { return catch_up_tokens_; }

private:
    std::shared_ptr<model> model_;
    double catch_up_ms_ = 0.0;
    std::size_t catch_up_tokens_ = 0;
    models::kv_cache cache_;
    models::forward_runner runner_;
    std::vector<std::int32_t> history_; ///< tokens in cache_
    std::vector<float> logits_;
};

/// The median of the last few samples of a step time (a fixed ring): on a loaded machine a step now and then takes
/// several times its usual time (the thread that a barrier waits for lost its core), and a median ignores those
/// outliers where a moving average follows them.
class recent_median {
public:
    static constexpr std::size_t size = 9;
    void add(double value) noexcept;
    /// The median of the samples held (of an even count, the lower middle value); 0 when there are none.
    [[nodiscard]] double median() const noexcept;
    [[nodiscard]] std::size_t count() const noexcept { return count_; }

private:
    double values_[size] = {};
    std::size_t count_ = 0;
    std::size_t next_ = 0;
};

/// Chooses each step's draft length from the measured acceptance and costs. Acceptance: decayed counts of accepted
/// and rejected drafts (no timing). Costs: a one-token step (median of recent plain steps), and per drafted token
/// the verification's extra time over a one-token step and the drafting time (medians of recent verification
/// steps); misses of streamed experts make the verification's share large, cached experts small. The length
/// maximises expected tokens per millisecond; 0 (plain decode) when no length beats one token per step. While off
/// it probes now and then (after 32 plain steps, twice as long after each probe that finds drafting still not
/// paying, up to 1024), as acceptance and costs change with the text. The first three drafting steps (the first
/// measurement) and every probe draft one token: streamed, a drafted position may read as many experts as a plain
/// step, so finding out that drafting does not pay must cost little. Not thread-safe: one per session.
class draft_controller {
public:
    /// The draft length of the next step, at most `limit` (0: a plain step).
    std::uint32_t next_k(std::uint32_t limit);
    /// A plain one-token step took `ms`, of which `wait_ms` stalled on expert reads (streamed experts; 0 resident).
    void record_plain(double ms, double wait_ms = 0.0);
    /// A verification step: `drafted` tokens, `accepted` of them before the first rejection (`rejected`: one
    /// was), the target's pass took `verify_ms` (of which `wait_ms` stalled on expert reads) and drafting
    /// `draft_ms` (the draft's steady cost per step, its catch-up on the tokens of the last step included; a
    /// catch-up on a new prompt left out).
    /// `predicted_reads`: the step's positions' predicted_misses() summed, or -1 when some position had no
    /// prediction (or nothing was predicted: resident experts).
    void record_verify(std::uint32_t drafted, std::uint32_t accepted, bool rejected, double verify_ms, double draft_ms,
                       double wait_ms = 0.0, double predicted_reads = -1.0);
    /// Whether the last next_k() was a choice of the cost model (not a measuring step, a probe or a plain step): only
    /// then does fit() choose again. With drafts that cost nothing to make, a session then drafts up to the limit and
    /// lets fit() choose from the drafts' own costs.
    [[nodiscard]] bool chose() const noexcept { return chosen_ != 0; }
    /// The length of this step's drafts from the state of the expert cache: `misses` has each position's
    /// predicted_misses() (the step's last token first, then the drafts). Each predicted read costs the measured
    /// expert wait per predicted read of recent verifications (wait_per_read()); a position without a prediction costs
    /// the measured wait per position. Returns the length, at most misses.size() - 1, that maximises expected tokens
    /// per millisecond (0: a plain step pays more). Without a choice to refine (chose()) or before three
    /// verifications with predictions were measured, it returns the shorter of the drafts and the last choice.
    [[nodiscard]] std::uint32_t fit(std::span<const double> misses) const;
    /// A plain step checked a draft of one token that cost nothing to make (prompt lookup) against the token it
    /// produced: `accepted` when they agreed. Counts in acceptance() like a verified draft. From the first such
    /// check on, drafting starts (the first measurement, a probe) only while acceptance() is at least one half, so
    /// a free draft that would be rejected never pays a verification to find that out.
    void record_shadow(bool accepted);
    /// The drafts cost nothing to make and plain steps check them (record_shadow): no drafting step is tried before
    /// the first such check.
    void expect_shadow() noexcept { free_drafts_ = true; }
    /// Estimated acceptance rate of one drafted token.
    [[nodiscard]] double acceptance() const noexcept { return accepted_ / tried_; }
    /// The costs the next choice uses (milliseconds; 0 until measured): a one-token step's compute (its time less
    /// its expert waits), per drafted token the verification's extra compute and the drafting time, and the expert
    /// wait per position of recent verifications (counted for every position of a step, plain or drafting). Compute and
    /// waits are kept apart because the waits change with the cache's state while compute does not: the first steps
    /// after a prompt wait for most of their experts (3 to 4 times a warm step's time, streamed), and a plain step's
    /// time taken then, set against verifications that run later on a warm cache, would make every drafted position
    /// look free.
    [[nodiscard]] double plain_ms() const noexcept { return plain_.median(); }
    [[nodiscard]] double extra_ms() const noexcept;
    [[nodiscard]] double draft_ms() const noexcept { return draft_.median(); }
    [[nodiscard]] double wait_ms() const noexcept { return wait_.median(); }
    /// Milliseconds of expert wait per predicted read: the waits of the recent verifications with predictions over
    /// their predicted reads (-1 until three were measured, or while they predicted no read).
    [[nodiscard]] double wait_per_read() const noexcept;

private:
    /// The length of a measuring step or probe: 1, or 3 when free drafts checked on plain steps were mostly right.
    [[nodiscard]] std::uint32_t explore_length(std::uint32_t limit) const noexcept;
    /// The length, at most `limit`, with the most expected tokens per millisecond, 0 when none beats a plain step by
    /// 2%: position i (0: the step's last token, paid by a plain step too) waits `wait(i)` ms for its experts.
    template <class Wait>
    [[nodiscard]] std::uint32_t best_length(std::uint32_t limit, Wait wait) const;

    recent_median plain_; ///< one-token steps' compute (the first, cold, left out)
    recent_median draft_; ///< drafting time per drafted token
    recent_median wait_;  ///< expert waits per position of recent verifications (plain steps are rare while
                          ///< drafting, and the cold ones after a prompt would make every position look costly)
    /// The last verification passes: compute time and draft length (extra_ms() sets them against the plain steps'
    /// median when it is asked, so that a fresh plain sample applies to every one of them).
    double verify_ms_[recent_median::size] = {};
    std::uint32_t verify_len_[recent_median::size] = {};
    std::size_t verify_count_ = 0;
    std::size_t verify_next_ = 0;
    /// The last verifications with predictions: expert wait and predicted reads (wait_per_read()).
    double predicted_wait_[recent_median::size] = {};
    double predicted_reads_[recent_median::size] = {};
    std::size_t predicted_count_ = 0;
    std::size_t predicted_next_ = 0;
    std::uint32_t chosen_ = 0; ///< the last next_k() when the cost model chose it, else 0
    double accepted_ = 1.0; ///< decayed counts behind acceptance(): a prior of 1 in 2
    double tried_ = 2.0;
    bool warm_ = false;              ///< the first plain step (cold) was seen and left out
    bool off_ = false;               ///< drafting does not pay: plain steps, with a probe now and then
    std::uint32_t since_plain_ = 0;  ///< verification steps since the last plain one (keeps plain_ fresh)
    std::uint32_t since_probe_ = 0;  ///< plain steps while off
    std::uint32_t probe_every_ = 32; ///< plain steps between probes while off (doubles while probes fail)
    bool probing_ = false;           ///< the last drafting step was a probe
    bool shadowed_ = false;          ///< record_shadow() was called: acceptance is known without drafting
    bool free_drafts_ = false;       ///< expect_shadow(): wait for the first check before drafting
};

/// Each token's prediction of the experts the target will choose for it: the routing row (kv_cache::routing_row) of
/// the latest position of `history` (the tokens in `cache`, which keeps routing) holding the same token, or null for
/// a token not seen there. `rows` gets one entry per token.
void latest_routing_rows(const models::kv_cache& cache, std::span<const std::int32_t> history,
                         std::span<const std::int32_t> tokens, std::vector<const std::int16_t*>& rows);

/// The reads each position of a verification is expected to add, from the state of the expert cache (streamed
/// experts): for each of `tokens` (the step's last token, then its drafts), how many experts its prediction
/// (latest_routing_rows) names, over every layer, that `source` neither holds nor is reading and that no earlier
/// token of the step named (the verification reads the union of its positions' experts once). -1 for a token without
/// a prediction. `out` gets one value per token, or nothing when the cache keeps no routing. Call it before the
/// step's draft-guided prefetch, which puts the predicted experts in flight.
void predicted_misses(const experts::expert_source& source, const models::kv_cache& cache,
                      std::span<const std::int32_t> history, std::span<const std::int32_t> tokens,
                      std::uint32_t n_layer, std::uint32_t top_k, std::vector<double>& out);
/// The same from the tokens' predictions already looked up (latest_routing_rows of a cache that keeps routing): a
/// step that also prefetches looks them up once.
void predicted_misses(const experts::expert_source& source, std::span<const std::int16_t* const> rows,
                      std::uint32_t n_layer, std::uint32_t top_k, std::vector<double>& out);

/// Draft-guided expert prefetch (streamed experts): before a verification, asks `source` to read the experts each
/// MoE layer is predicted to choose for the step's tokens (`tokens`: the last token and the drafts; predictions as
/// latest_routing_rows makes them), so that the verification finds them cached or in flight instead of reading them
/// one layer ahead. A token not seen before predicts nothing. Experts already cached cost nothing; at most `limit`
/// experts are asked for, the earliest layers first. Returns how many were asked for.
boost::asio::awaitable<std::size_t> prefetch_draft_experts(experts::expert_source& source,
                                                           const models::kv_cache& cache,
                                                           std::span<const std::int32_t> history,
                                                           std::span<const std::int32_t> tokens, std::uint32_t n_layer,
                                                           std::uint32_t top_k, std::size_t limit);
/// The same from the tokens' predictions already looked up (latest_routing_rows; null entries predict nothing).
boost::asio::awaitable<std::size_t> prefetch_draft_experts(experts::expert_source& source,
                                                           std::span<const std::int16_t* const> rows,
                                                           std::uint32_t n_layer, std::uint32_t top_k,
                                                           std::size_t limit);

/// One drafted token's verdict, or the token that replaced it.
struct verified_token {
    runtime::sampled_token chosen;
    std::vector<token_logprob> top;
};

/// What a verification needs from the target's sequence and the generation.
struct verify_target {
    batch_engine& runner; ///< the target model's: verification is one of its steps
    models::kv_cache& cache;
    std::vector<std::int32_t>& history; ///< tokens in `cache`
    runtime::sampler& sampler;
    const tokenizer::tokenizer& vocab;
    std::size_t top_logprobs = 0;
    bool ignore_eos = false;
};

/// Forwards `last` and `drafts` in one pass of the target, then walks the positions: each drafted token is
/// accepted or replaced by sampler::sample_against, the first replacement (or an end-of-generation token, unless
/// ignore_eos) ends the walk, and when every draft is accepted the last row gives one more token. The tokens to
/// emit go to `out` (1 to drafts.size() + 1, each already accept()ed by the sampler); the cache and history keep
/// `last` and the accepted drafts. Returns how many drafts were accepted. Errors: the forward pass failed (the cache
/// then holds nothing of this step).
boost::asio::awaitable<result<std::uint32_t>> verify(verify_target& t, std::int32_t last,
                                                     std::span<const std::int32_t> drafts, std::vector<float>& logits,
                                                     std::vector<verified_token>& out);

} // namespace sluice::speculation
