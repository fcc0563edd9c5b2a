// sluice::session and generation: a sequence's cache, and `generate(request)` returning a stream of token events
// consumed with co_await in a loop, cancellable through asio's cancellation slots.
#pragma once

#include "sluice/error.hpp"
#include "sluice/model.hpp"
#include "sluice/sampling.hpp"
#include "sluice/speculative.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

/// What to generate. The prompt is, in order of precedence: `prompt_tokens` as given, `messages` rendered
/// through the model's chat template (with the generation prompt), or `prompt` encoded as text.
struct generate_request {
    std::string prompt;
    boost::json::array messages;         ///< OpenAI-style chat messages
    boost::json::object template_kwargs; ///< extra chat-template variables (enable_thinking, ...)
    std::vector<std::int32_t> prompt_tokens;
    sampling_params sampling;
    std::uint32_t max_tokens = 256; ///< 0: until end of generation or a full context
    std::vector<std::string> stop;  ///< stop strings (never part of the output)
    bool ignore_eos = false;        ///< keep going past end-of-generation tokens
    std::size_t top_logprobs = 0;   ///< report this many alternatives per token
    /// GBNF grammar (llama.cpp's syntax, `root` the start rule) the output must follow; empty: none. Each step
    /// samples only among tokens whose bytes continue a valid document (logprobs still report the model's raw
    /// distribution), end-of-generation is allowed once the document is complete, and the generation stops
    /// with finish_reason::stop once nothing but end-of-generation can follow. An invalid grammar fails the
    /// first next() with std::errc::invalid_argument ("grammar: line 2, column 5: ...").
    std::string grammar;
    speculative_params speculative; ///< drafted tokens verified in one forward pass (same output; faster decode)
};

/// Why a generation ended.
enum class finish_reason {
    stop,         ///< an end-of-generation token or a stop string
    length,       ///< max_tokens reached
    context_full, ///< the session's context has no room for another token
    cancelled,    ///< the awaiting operation was cancelled
};

/// "stop", "length", "context_full", "cancelled".
std::string_view to_string(finish_reason r) noexcept;

/// One generated token. `text` is what may be shown now: stop-string prefixes are held back and released
/// later, so it can be empty. The last event of a stream may carry `token == -1`: text held back until the
/// end and no new token.
struct token_event {
    std::int32_t token = -1;
    std::string text;
    float logprob = 0.0f;           ///< log-probability under the model's raw distribution
    std::vector<token_logprob> top; ///< when top_logprobs > 0
    double ms = 0.0;                ///< time to produce this token
};

/// One decode step's forward pass (generation_summary::steps).
struct decode_step_timing {
    std::uint32_t positions = 1;    ///< tokens in the pass: 1 for a plain step, 1 + drafts for a verification
    std::uint32_t accepted = 0;     ///< drafts accepted (verifications)
    double ms = 0.0;                ///< the forward pass
    double wait_ms = 0.0;           ///< of ms, stalled on expert reads (streamed experts)
    std::uint64_t expert_reads = 0; ///< experts read from disk during the pass (streamed experts)
    /// Before a verification, the reads its positions were predicted to add from the expert cache's state (the
    /// draft controller's cost); -1 when not predicted (plain steps, resident experts, a token never seen before).
    double predicted_reads = -1.0;
};

/// Totals of a finished (or running) generation.
struct generation_summary {
    finish_reason reason = finish_reason::stop;
    bool finished = false;
    std::uint32_t prompt_tokens = 0;       ///< tokens of the prompt
    std::uint32_t cached_tokens = 0;       ///< prompt tokens reused from the session's previous turn
    std::uint32_t completion_tokens = 0;   ///< tokens generated
    double prompt_ms = 0.0;                ///< prefill time (the tokens not reused)
    double decode_ms = 0.0;                ///< time of all decode steps
    std::string stopped_by;                ///< the stop string that ended it, if any
    std::uint32_t drafted_tokens = 0;      ///< speculation: tokens drafted and verified
    std::uint32_t accepted_tokens = 0;     ///< of those, accepted by the target
    std::uint32_t verify_steps = 0;        ///< forward passes that verified drafts
    double draft_ms = 0.0;                 ///< of decode_ms, time spent drafting
    double verify_ms = 0.0;                ///< of decode_ms, the verifications' forward passes
    double verify_wait_ms = 0.0;           ///< of verify_ms, stalled on expert reads (streamed experts)
    std::uint32_t plain_steps = 0;         ///< one-token decode steps
    double plain_ms = 0.0;                 ///< of decode_ms, those steps' forward passes
    double plain_wait_ms = 0.0;            ///< of plain_ms, stalled on expert reads (streamed experts)
    std::vector<decode_step_timing> steps; ///< every decode step's pass, in order
};

class session;

/// The events of one generation. Pull-driven: each `next()` runs the forward passes for the next token on
/// the model's compute pool, so nothing runs while nobody awaits. Move-only; must not outlive its session.
class token_stream {
public:
    /// The next event, or nullopt when the generation has ended (see summary()). Errors: a prompt that does
    /// not fit the context, a chat request for a model without a template, a failed expert read. When the
    /// awaiting coroutine's cancellation slot fires (terminal cancellation by default) during a step, the
    /// stream ends with finish_reason::cancelled after that step. Note asio's rule: once a coroutine has been
    /// cancelled, its next `co_await` throws operation_aborted unless it called
    /// `co_await boost::asio::this_coro::throw_if_cancelled(false)`; callers that want to keep reading the
    /// stream (to see `cancelled`) make that call first.
    boost::asio::awaitable<result<std::optional<token_event>>> next();

    [[nodiscard]] const generation_summary& summary() const noexcept;
    /// Every generated token id so far.
    [[nodiscard]] const std::vector<std::int32_t>& tokens() const noexcept;

    token_stream(token_stream&&) noexcept;
    token_stream& operator=(token_stream&&) noexcept;
    ~token_stream();

private:
    friend class session;
    struct state;
    token_stream(session& s, generate_request req);
    std::unique_ptr<state> state_;
};

/// One sequence: its cache and history. Consecutive generations reuse the longest common prefix of the
/// previous prompt + output (where the model's layers allow going back to it; for models with recurrent layers,
/// whose state cannot be cut back, the longest prefix ending at a state checkpoint: the end of each prompt, the end
/// of each generation, and every checkpoint_interval positions of a long prefill). One generation at a time per
/// session; many sessions may share a model and run concurrently on one io_context. Sessions of one model are
/// batched without the caller doing anything: their forward passes go through the model's batch engine, which runs
/// the waiting sequences' tokens as one step (decode tokens, then prompt chunks FIFO, up to n_batch tokens), so the
/// weights and each chosen expert are read once per step for all of them; greedy output is what each gets alone.
/// A new prompt may also copy the longest prefix another session of the model holds (models without recurrent or
/// windowed layers); `cached_tokens` counts it.
class session {
public:
    /// `n_ctx` 0 takes the model's default context.
    explicit session(std::shared_ptr<model> m, std::uint32_t n_ctx = 0);
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    /// Starts a generation. Validation errors (bad sampling parameters) surface on the first next().
    token_stream generate(generate_request request);

    /// Renders `request` into prompt tokens (template or text) without generating.
    result<std::vector<std::int32_t>> prompt_tokens(const generate_request& request) const;

    /// Runs tokens through the model and returns the logits of every position ([n][n_vocab]), appending
    /// them to the session's history. For scoring and tests.
    boost::asio::awaitable<result<void>> evaluate(std::span<const std::int32_t> tokens, std::vector<float>& logits);

    /// Forgets the history (the next generation prefills from scratch).
    void reset() noexcept;

    [[nodiscard]] model& owner() noexcept;
    [[nodiscard]] std::uint32_t context_size() const noexcept;
    [[nodiscard]] std::uint32_t tokens_in_context() const noexcept;
    /// Positions of the recurrent-state checkpoints held (models with recurrent layers), oldest first.
    [[nodiscard]] std::vector<std::uint32_t> checkpoint_positions() const;

private:
    friend class token_stream;
    friend struct token_stream::state;
    struct state;
    std::unique_ptr<state> state_;
};

} // namespace sluice
