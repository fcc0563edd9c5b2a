// The batch engine: every session on a model submits its forward passes here, and each step runs the decode tokens
// of all waiting sequences plus prompt chunks (FIFO, under a per-step token budget) as one forward pass, so the
// weights are read and each chosen expert fetched once per step for every sequence that needs them.
#pragma once

#include "base/async_event.hpp"
#include "runtime/models/forward.hpp"
#include "sluice/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace sluice {

/// What the step planner sees of one queued request.
struct step_candidate {
    std::uint32_t remaining = 0; ///< tokens not yet run
    std::uint32_t max_chunk = 0; ///< the most it may run in one step (its cache's max_append)
};

/// One request's share of a step: `tokens` of queue entry `index`.
struct step_share {
    std::size_t index = 0;
    std::uint32_t tokens = 0;
};

/// Fills a step of at most `budget` tokens and `max_sequences` sequences from `queue` (oldest first): first one
/// token for every request that has one token left (a decode step, so that running generations never wait behind a
/// prompt), then prompt chunks in FIFO order, each as much as the budget left and its max_chunk allow.
std::vector<step_share> plan_step(std::span<const step_candidate> queue, std::uint32_t budget,
                                  std::size_t max_sequences);

/// A sequence whose cached prefix other sequences of the model may copy (cross-slot prompt reuse).
struct shared_sequence {
    const models::kv_cache* cache = nullptr;
    const std::vector<std::int32_t>* history = nullptr; ///< the tokens whose keys and values `cache` holds
};

/// Counters of a batch engine.
struct batch_engine_counters {
    std::uint64_t steps = 0;          ///< forward passes run
    std::uint64_t tokens = 0;         ///< tokens they ran
    std::uint64_t sequence_rows = 0;  ///< sum over steps of the sequences in the step
    std::uint32_t widest_step = 0;    ///< the most sequences one step held
    double step_s = 0;                ///< seconds in forward passes (expert waits included)
    double expert_wait_s = 0;         ///< of those, seconds stalled on expert reads
    double gather_s = 0;              ///< seconds waiting before a step for the last step's sequences to come back
    std::uint64_t prefill_steps = 0;  ///< side steps: new prompts run between two layers of a step in progress
    std::uint64_t prefill_tokens = 0; ///< tokens they ran (also in `tokens`)
    double prefill_queue_s = 0;       ///< summed over their prompts: seconds from forward() to their step's start
    double prefill_step_s = 0;        ///< seconds in prefill steps (one run between two layers is in step_s too)
    double prefill_expert_wait_s = 0; ///< of those, seconds stalled on expert reads
};

/// The most tokens of new prompts that run as a prefill step of their own (batch_engine): a prompt that fits runs
/// before the next step is planned or, when it comes while a step runs, between two layers of that step, so its
/// first token never waits for a step of many sequences; longer prompts join the steps as chunks. The memory plan
/// counts a forward runner of this many tokens beside the step's.
constexpr std::uint32_t prefill_step_tokens = 64;

/// One per model, held by shared_ptr (the step loop keeps it alive until it ends). Thread-safe submission; the steps
/// run on the executor of the request that found the engine idle. A new prompt of up to prefill_step_tokens tokens
/// runs as a prefill step of its own on a second runner, ahead of the next step or between two layers of the step
/// in progress (which then goes on where it stopped).
class batch_engine : public std::enable_shared_from_this<batch_engine>, private models::yield_hook {
public:
    /// `max_batch`: the step token budget (and the runner's batch). With a routing log, each step holds one
    /// sequence (the log follows one sequence at a time).
    batch_engine(const models::architecture& arch, const models::model_hparams& hp, const models::model_weights& w,
                 runtime::compute_pool& pool, experts::expert_source& experts, std::uint32_t max_batch,
                 experts::routing_log* routing);
    batch_engine(const batch_engine&) = delete;
    batch_engine& operator=(const batch_engine&) = delete;
    ~batch_engine();

    /// Appends `tokens` to `cache` as part of the engine's steps (chunked to the budget), writing the logits
    /// `mode` asks for into `logits` (resized). The same contract as forward_runner::forward: errors for a bad
    /// token, a full context or an expert read failure. Cancelled through the awaiting coroutine's cancellation
    /// slot: the request leaves at the next step boundary (operation_aborted); chunks already run stay in the cache.
    /// `cache` must not be in another request at the same time. `prompt`: the tokens are a new request's prompt
    /// (what its cache does not hold yet), which runs as a prefill step when it fits (prefill_step_tokens).
    boost::asio::awaitable<result<void>> forward(models::kv_cache& cache, std::span<const std::int32_t> tokens,
                                                 models::logits_mode mode, std::vector<float>& logits,
                                                 bool prompt = false);

    [[nodiscard]] batch_engine_counters counters() const;

    /// The sequence of `cache` will not queue its next pass soon (it drafts tokens first, on the compute pool): the
    /// step loop does not wait for it before the next step (that wait polls the io_context, which would take a core
    /// from the drafting). Cleared by the sequence's next forward(). Thread-safe.
    void step_away(const models::kv_cache& cache);

    /// Sessions publish their sequence while they live, so that a new prompt on another session can copy the
    /// longest prefix any of them holds. Use from the sessions' io_context only (the copy reads rows no step writes).
    void publish(const shared_sequence* s);
    void withdraw(const shared_sequence* s);
    /// The published sequence other than `self` sharing the longest prefix with `prompt`, and that length (0 and
    /// nullptr when none shares a token).
    [[nodiscard]] std::pair<const shared_sequence*, std::size_t> longest_prefix(std::span<const std::int32_t> prompt,
                                                                                const shared_sequence* self) const;
    [[nodiscard]] std::uint32_t max_batch() const noexcept { return runner_.max_batch(); }

private:
    struct request {
        explicit request(const boost::asio::any_io_executor& ex) : done_event(ex) {}
        models::kv_cache* cache = nullptr;
        std::span<const std::int32_t> tokens;
        models::logits_mode mode = models::logits_mode::last;
        std::vector<float>* logits = nullptr;
        std::chrono::steady_clock::time_point queued; ///< when forward() queued it
        std::size_t done = 0;                         ///< tokens run
        bool prompt = false;                          ///< a new request's prompt (see forward)
        bool in_step = false;                         ///< the step in progress uses its cache and logits
        bool cancelled = false;                       ///< leave at the next step boundary
        bool finished = false;                        ///< out of the queue; `outcome` is final
        result<void> outcome;
        async_event done_event;
    };

    /// The step loop; `self` keeps the engine alive while the loop waits for sequences to come back, which may be
    /// after the last session and the model went away.
    boost::asio::awaitable<void> run_steps(std::shared_ptr<batch_engine> self);
    /// Under the lock: takes `r` out of the queue with `outcome` and wakes its waiter.
    void finish(request& r, result<void> outcome);
    /// Under the lock, after a request of the step in progress was cancelled: when no request of that step is
    /// still wanted, the step's waits for experts are cancelled (on the engine's executor), so that it ends early.
    void cancel_step_if_abandoned();
    /// Whether `r` is a new prompt that a prefill step may run whole (under the lock).
    [[nodiscard]] bool fits_prefill_step(const request& r) const noexcept;
    /// yield_hook: a new prompt waits while a step runs.
    [[nodiscard]] bool wanted() const noexcept override;
    /// yield_hook, and before planning a step: runs the waiting new prompts that fit (oldest first, up to
    /// prefill_step_tokens) as one step on the prefill runner, and hands them their logits.
    boost::asio::awaitable<void> run() override;

    models::forward_runner runner_;
    models::forward_runner prefill_runner_; ///< new prompts' steps beside the step in progress (never routed)
    std::atomic<bool> prefill_waiting_{false};
    std::uint32_t prediction_limit_;
    bool one_sequence_per_step_;
    mutable std::mutex mu_;
    std::deque<request*> queue_;
    std::vector<const shared_sequence*> published_;
    std::vector<request*> in_step_;             ///< the requests of the step in progress
    std::vector<const models::kv_cache*> away_; ///< sequences that will not be back soon (step_away)
    std::uint64_t step_id_ = 0;                 ///< counts steps started
    bool running_ = false;
    boost::asio::any_io_executor executor_;        ///< where the steps run (while running_)
    boost::asio::cancellation_signal step_cancel_; ///< bound to the step loop; emitted on its executor only
    batch_engine_counters counters_;
};

} // namespace sluice
