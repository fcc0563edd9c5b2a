// Sessions and token streams: prompt rendering, prefix reuse, prefill, then one decode step per next().
#include "runtime/engine/session.hpp"

#include "runtime/chat/content_guard.hpp"
#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/mtp.hpp"
#include "runtime/engine/speculative.hpp"
#include "runtime/generate/sampler.hpp"
#include "runtime/generate/stop_strings.hpp"
#include "runtime/grammar/token_mask.hpp"
#include "runtime/models/forward.hpp"
#include "runtime/models/kv_cache.hpp"
#include "runtime/tokenizer/stream_decoder.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <limits>

namespace sluice {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

boost::asio::awaitable<bool> cancelled() {
    auto state = co_await boost::asio::this_coro::cancellation_state;
    co_return state.cancelled() != boost::asio::cancellation_type::none;
}

} // namespace

std::string_view to_string(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::stop:
        return "stop";
    case finish_reason::length:
        return "length";
    case finish_reason::context_full:
        return "context_full";
    case finish_reason::cancelled:
        return "cancelled";
    }
    return "stop";
}

/// A session's sequence: its cache, the forward pass that fills it, and the tokens it holds.
struct session::state {
    state(std::shared_ptr<model> m, std::uint32_t n_ctx)
        : model_(std::move(m)),
          cache_(models::cache_layout_of(model_->arch(), model_->hparams()), n_ctx ? n_ctx : model_->options().n_ctx,
                 model_->options().kv_type == kv_cache_type::f32 ? kernels::quant_type::f32 : kernels::quant_type::f16,
                 model_->options().n_batch),
          engine_(model_->batch()), runner_(*engine_) {
        if (model_->mtp() != nullptr) {
            cache_.keep_hidden(model_->hparams().n_embd); // what the MTP block drafts from
        }
        if (model_->streams_experts() && model_->hparams().is_moe()) {
            // What draft-guided prefetch and the draft length's expected cost predict drafted tokens' experts from.
            cache_.keep_routing(model_->hparams().n_layer, model_->hparams().n_expert_used);
        }
        engine_->publish(&shared_);
    }
    ~state() { engine_->withdraw(&shared_); }
    state(const state&) = delete;
    state& operator=(const state&) = delete;

    std::shared_ptr<model> model_;
    models::kv_cache cache_;
    std::shared_ptr<batch_engine> engine_; ///< the model's: every session's forward passes share its steps
    batch_engine& runner_;
    std::vector<std::int32_t> history_;                ///< tokens whose keys/values are in cache_
    shared_sequence shared_{&cache_, &history_};       ///< what other sessions of the model may copy a prefix from
    std::unique_ptr<speculation::draft_runner> draft_; ///< the draft model's sequence, made on first use
    std::unique_ptr<speculation::mtp_runner> mtp_;     ///< the MTP block's sequence, made on first use
    speculation::draft_controller controllers_[3];     ///< draft lengths: prompt lookup, draft model, MTP

    /// The draft-length controller of `mode` (lookup, draft or mtp).
    speculation::draft_controller& controller(speculative_mode mode) {
        return controllers_[mode == speculative_mode::draft ? 1 : mode == speculative_mode::mtp ? 2 : 0];
    }

    /// The recurrent states at one position of the history.
    struct state_checkpoint {
        std::uint32_t pos = 0;
        std::vector<float> states;
    };
    std::vector<state_checkpoint> checkpoints_;

    /// Keeps the states at the cache's current position (models with recurrent layers; within the limit, the
    /// oldest checkpoint giving way).
    void save_checkpoint();
    /// Goes back to the longest reusable prefix of at most `want` tokens and returns its length: any prefix when
    /// no layer is recurrent, else the latest checkpoint at or before `want` (0 when none).
    std::uint32_t rewind(std::uint32_t want);
    /// After a forward pass that failed or was cancelled part-way. Attention rows past size() were never committed,
    /// but a recurrent layer updates its state in place, so that state may hold part of the lost tokens: the
    /// sequence goes back to its latest checkpoint (or to empty).
    void drop_partial_step();
    /// Restores the latest checkpoint at or before `want` (or empties the cache); returns the position reached.
    std::uint32_t restore_checkpoint(std::uint32_t want);
    /// Drops the checkpoints and history past `reached` (the cache's new size); returns it.
    std::uint32_t forget_past(std::uint32_t reached);
    /// Prefills `tokens` after the history, taking a checkpoint every checkpoint_interval positions.
    boost::asio::awaitable<result<void>> prefill(std::span<const std::int32_t> tokens, std::vector<float>& logits);
};

void session::state::save_checkpoint() {
    const auto limit = model_->options().state_checkpoints;
    if (!cache_.has_state() || limit == 0 || cache_.size() == 0) {
        return;
    }
    const auto pos = cache_.size();
    std::erase_if(checkpoints_, [&](const state_checkpoint& c) { return c.pos == pos; });
    if (checkpoints_.size() >= limit) {
        checkpoints_.erase(checkpoints_.begin());
    }
    const auto states = cache_.states();
    checkpoints_.push_back({pos, std::vector<float>(states.begin(), states.end())});
}

std::uint32_t session::state::rewind(std::uint32_t want) {
    if (cache_.can_truncate(want)) {
        cache_.truncate(want);
        return forget_past(cache_.size());
    }
    return restore_checkpoint(want);
}

std::uint32_t session::state::restore_checkpoint(std::uint32_t want) {
    const state_checkpoint* best = nullptr;
    for (const auto& c : checkpoints_) {
        if (c.pos <= want && c.pos <= cache_.size() && cache_.can_restore() && (!best || c.pos > best->pos)) {
            best = &c;
        }
    }
    if (best) {
        cache_.restore(best->pos, best->states);
    } else {
        cache_.truncate(0); // nothing saved on this prefix: start over
    }
    return forget_past(cache_.size());
}

std::uint32_t session::state::forget_past(std::uint32_t reached) {
    std::erase_if(checkpoints_, [&](const state_checkpoint& c) { return c.pos > reached; });
    history_.resize(reached);
    return reached;
}

void session::state::drop_partial_step() {
    if (cache_.has_state()) {
        restore_checkpoint(cache_.size());
    }
}

boost::asio::awaitable<result<void>> session::state::prefill(std::span<const std::int32_t> tokens,
                                                             std::vector<float>& logits) {
    const std::uint32_t interval = cache_.has_state() ? model_->options().checkpoint_interval : 0;
    while (!tokens.empty()) {
        // Up to the next multiple of the interval, where a checkpoint is taken.
        std::size_t n = tokens.size();
        if (interval != 0) {
            n = std::min<std::size_t>(n, interval - cache_.size() % interval);
        }
        auto r = co_await runner_.forward(cache_, tokens.first(n), models::logits_mode::last, logits, true);
        if (!r) {
            drop_partial_step();
            co_return r;
        }
        history_.insert(history_.end(), tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n));
        tokens = tokens.subspan(n);
        if (interval != 0 && cache_.size() % interval == 0) {
            save_checkpoint();
        }
    }
    co_return result<void>{};
}

/// One generation's progress.
struct token_stream::state {
    state(session& s, generate_request req);
    boost::asio::awaitable<result<std::optional<token_event>>> next_step();
    boost::asio::awaitable<result<void>> start();
    std::optional<token_event> finish(finish_reason reason);
    /// Ends the stream after a failed step: the error, or a cancelled finish when the consumer had cancelled
    /// (which is why a read or a wait failed).
    result<std::optional<token_event>> fail(error e, bool was_cancelled);
    std::optional<token_event> take_token(std::int32_t token, float logprob, std::vector<token_logprob> top, double ms,
                                          bool accepted_by_sampler = false);
    boost::asio::awaitable<result<void>> start_grammar();
    /// Computes (or finds cached) the grammar's mask for the current state on the compute pool.
    boost::asio::awaitable<void> mask_on_pool();
    /// Samples the next token, through the grammar's mask when there is one; nullopt when no token is allowed.
    std::optional<runtime::sampled_token> sample(std::vector<token_logprob>& top);
    [[nodiscard]] model& owner() const noexcept { return *seq_->model_; }
    /// Speculation (runtime/engine/speculative.hpp): decides the mode at start; a step drafts, verifies, and
    /// leaves the verified tokens in ready_. Returns false when this step decodes one token plainly instead.
    result<void> start_speculation();
    boost::asio::awaitable<result<bool>> speculate();
    /// Emits a sampled token (the end-of-generation check, then take_token).
    std::optional<token_event> emit(const runtime::sampled_token& chosen, std::vector<token_logprob> top, double ms,
                                    bool accepted_by_sampler);
    /// Streaming experts: experts read from disk so far (0 when resident).
    [[nodiscard]] std::uint64_t expert_reads() const;

    session* session_;
    session::state* seq_;
    generate_request req_;
    runtime::sampler sampler_;
    runtime::stop_matcher stops_;
    std::optional<tokenizer::stream_decoder> decoder_;
    generation_summary summary_;
    std::vector<std::int32_t> prompt_;
    std::vector<std::int32_t> generated_;
    std::vector<float> logits_;
    std::optional<grammar::token_filter> grammar_; ///< when the request has a grammar
    std::vector<float> masked_;                    ///< logits_ with the tokens the grammar refuses at -inf
    bool grammar_done_ = false;                    ///< only end-of-generation can follow
    bool started_ = false;
    bool ended_ = false;
    bool pending_ = false; ///< logits_ hold the distribution of the next token
    speculative_mode spec_mode_ = speculative_mode::off;
    std::uint32_t spec_max_ = 0;
    std::vector<std::int32_t> drafts_;
    std::vector<std::int32_t> prefetch_tokens_; ///< a step's tokens, whose experts are predicted (rows_)
    std::vector<const std::int16_t*> rows_;     ///< a step's tokens' predicted experts (latest_routing_rows)
    std::vector<double> misses_;                ///< a step's positions' predicted reads (speculation::predicted_misses)
    std::int32_t shadow_draft_ = -1; ///< a plain step's unverified lookup draft, checked against its token (or -1)
    std::vector<std::int32_t> context_; ///< draft_context()'s buffer, kept to spare an allocation per step
    /// What drafting continues: the tokens in the cache and the last generated one (not in the cache yet).
    std::span<const std::int32_t> draft_context() {
        context_.assign(seq_->history_.begin(), seq_->history_.end());
        context_.push_back(generated_.back());
        return context_;
    }
    std::vector<speculation::verified_token> verified_;
    std::deque<speculation::verified_token> ready_; ///< verified tokens not emitted yet
    double ready_ms_ = 0.0;                         ///< each one's share of its step's time
};

session::session(std::shared_ptr<model> m, std::uint32_t n_ctx)
    : state_(std::make_unique<state>(std::move(m), n_ctx)) {}

session::~session() = default;

model& session::owner() noexcept {
    return *state_->model_;
}
std::uint32_t session::context_size() const noexcept {
    return state_->cache_.capacity();
}
std::uint32_t session::tokens_in_context() const noexcept {
    return state_->cache_.size();
}

std::vector<std::uint32_t> session::checkpoint_positions() const {
    std::vector<std::uint32_t> out;
    for (const auto& c : state_->checkpoints_) {
        out.push_back(c.pos);
    }
    return out;
}

token_stream session::generate(generate_request request) {
    return token_stream(*this, std::move(request));
}

void session::reset() noexcept {
    state_->cache_.truncate(0);
    state_->history_.clear();
    state_->checkpoints_.clear();
}

result<std::vector<std::int32_t>> session::prompt_tokens(const generate_request& request) const {
    if (!request.prompt_tokens.empty()) {
        return request.prompt_tokens;
    }
    const auto& tok = state_->model_->vocab();
    if (!request.messages.empty()) {
        const auto& tmpl = state_->model_->chat_template();
        const auto* parsed = state_->model_->parsed_chat_template();
        if (!tmpl || parsed == nullptr) {
            return make_error(std::errc::invalid_argument, "the model has no chat template");
        }
        if (!*parsed) {
            return parsed->error();
        }
        chat::chat_inputs inputs;
        inputs.messages = request.messages;
        inputs.add_generation_prompt = true;
        inputs.kwargs = request.template_kwargs;
        inputs.bos_token = tmpl->bos_token;
        inputs.eos_token = tmpl->eos_token;
        if (state_->model_->options().special_tokens_in_content) {
            auto text = chat::render_chat(**parsed, inputs);
            if (!text) {
                return text.error();
            }
            return tok.encode(*text, {.add_special = false, .parse_special = true});
        }
        auto prompt = chat::render_chat_guarded(**parsed, inputs, tok.control_texts());
        if (!prompt) {
            return prompt.error();
        }
        return tok.encode(prompt->text,
                          {.add_special = false, .parse_special = true, .literal_spans = prompt->literal_spans});
    }
    auto ids = tok.encode(request.prompt, {.add_special = true, .parse_special = true});
    if (ids.empty()) {
        return make_error(std::errc::invalid_argument, "the prompt is empty");
    }
    return ids;
}

boost::asio::awaitable<result<void>> session::evaluate(std::span<const std::int32_t> tokens,
                                                       std::vector<float>& logits) {
    auto r = co_await state_->runner_.forward(state_->cache_, tokens, models::logits_mode::all, logits);
    if (r) {
        state_->history_.insert(state_->history_.end(), tokens.begin(), tokens.end());
    }
    co_return r;
}

token_stream::token_stream(session& s, generate_request req) : state_(std::make_unique<state>(s, std::move(req))) {}
token_stream::token_stream(token_stream&&) noexcept = default;
token_stream& token_stream::operator=(token_stream&&) noexcept = default;
token_stream::~token_stream() = default;

const generation_summary& token_stream::summary() const noexcept {
    return state_->summary_;
}
const std::vector<std::int32_t>& token_stream::tokens() const noexcept {
    return state_->generated_;
}

token_stream::state::state(session& s, generate_request req)
    : session_(&s), seq_(s.state_.get()), req_(std::move(req)),
      sampler_(runtime::validate(req_.sampling) ? req_.sampling : sampling_params{}, s.owner().hparams().n_vocab),
      stops_(req_.stop) {}

boost::asio::awaitable<result<void>> token_stream::state::start() {
    started_ = true;
    if (auto v = runtime::validate(req_.sampling); !v) {
        co_return v.error();
    }
    if (auto g = co_await start_grammar(); !g) {
        co_return g.error();
    }
    auto prompt = session_->prompt_tokens(req_);
    if (!prompt) {
        co_return prompt.error();
    }
    prompt_ = std::move(*prompt);
    auto& cache = seq_->cache_;
    auto& history = seq_->history_;
    if (prompt_.size() >= cache.capacity()) {
        co_return make_error(std::errc::invalid_argument, "the prompt has " + std::to_string(prompt_.size()) +
                                                              " tokens; the context holds " +
                                                              std::to_string(cache.capacity()));
    }
    // Reuse the longest common prefix of the cached history, always recomputing the prompt's last token.
    std::size_t reuse = 0;
    while (reuse < history.size() && reuse < prompt_.size() && history[reuse] == prompt_[reuse]) {
        ++reuse;
    }
    reuse = std::min(reuse, prompt_.size() - 1);
    // Another session of the model may hold a longer prefix of this prompt (a shared system prompt, a conversation
    // that moved to another slot): its rows are copied in.
    if (const auto [donor, n] = seq_->engine_->longest_prefix(prompt_, &seq_->shared_); donor != nullptr) {
        const auto take = static_cast<std::uint32_t>(std::min(n, prompt_.size() - 1));
        if (take > reuse && cache.can_copy_prefix(*donor->cache, take)) {
            cache.copy_prefix(*donor->cache, take);
            history.assign(prompt_.begin(), prompt_.begin() + take);
            seq_->checkpoints_.clear();
            reuse = take;
        }
    }
    reuse = seq_->rewind(static_cast<std::uint32_t>(reuse)); // a recurrent layer goes back to a checkpoint
    summary_.prompt_tokens = static_cast<std::uint32_t>(prompt_.size());
    summary_.cached_tokens = static_cast<std::uint32_t>(reuse);
    decoder_.emplace(owner().vocab(), tokenizer::decode_options{.skip_special = true});
    for (const auto t : prompt_) {
        sampler_.accept(t);
    }
    const auto t0 = clock_type::now();
    const std::span<const std::int32_t> rest(prompt_.data() + reuse, prompt_.size() - reuse);
    auto r = co_await seq_->prefill(rest, logits_);
    if (!r) {
        co_return r;
    }
    seq_->save_checkpoint(); // the prompt's end: the next turn of a conversation starts here or later
    pending_ = true;
    if (auto s = start_speculation(); !s) {
        co_return s;
    }
    if (spec_mode_ == speculative_mode::draft) {
        // The draft model reads the prompt now, as part of the prompt's time (as llama.cpp's examples count it), so
        // that decode steps pay only for drafting. A failure leaves it to the first drafting step.
        if (!seq_->draft_) {
            seq_->draft_ = std::make_unique<speculation::draft_runner>(owner().draft(), cache.capacity());
        }
        seq_->runner_.step_away(cache);
        (void)co_await seq_->draft_->catch_up(history);
    }
    summary_.prompt_ms = ms_since(t0);
    co_return result<void>{};
}

result<void> token_stream::state::start_speculation() {
    const auto& opts = owner().options();
    spec_mode_ = req_.speculative.mode.value_or(opts.speculative);
    spec_max_ = req_.speculative.max_draft ? req_.speculative.max_draft : opts.draft_max;
    if (spec_mode_ == speculative_mode::draft && !owner().draft()) {
        if (req_.speculative.mode) {
            return make_error(std::errc::invalid_argument,
                              "speculative.mode \"draft\": the model was loaded without a draft model" +
                                  (owner().draft_warning().empty() ? std::string(" (--draft)")
                                                                   : " (" + owner().draft_warning() + ")"));
        }
        spec_mode_ = speculative_mode::off;
    }
    if (spec_mode_ == speculative_mode::mtp && owner().mtp() == nullptr) {
        if (req_.speculative.mode) {
            return make_error(std::errc::invalid_argument,
                              "speculative.mode \"mtp\": the model was loaded without its multi-token prediction "
                              "block (--mtp, on a file that has one)");
        }
        spec_mode_ = speculative_mode::off;
    }
    // A grammar's mask depends on every token before it, and a recurrent state cannot be cut back after a
    // rejected draft: both decode one token per step.
    if (grammar_ || seq_->cache_.has_state() || spec_max_ == 0) {
        spec_mode_ = speculative_mode::off;
    }
    return {};
}

std::uint64_t token_stream::state::expert_reads() const {
    return owner().streams_experts() ? owner().expert_counters().misses : 0;
}

boost::asio::awaitable<result<bool>> token_stream::state::speculate() {
    auto& cache = seq_->cache_;
    // Room for the drafts: the tokens still wanted (the step adds one of its own), the context, one batch.
    std::uint64_t limit = spec_max_;
    if (req_.max_tokens != 0) {
        limit = std::min<std::uint64_t>(limit, req_.max_tokens - summary_.completion_tokens - 1);
    }
    limit = std::min<std::uint64_t>(limit, cache.capacity() - cache.size() - 1);
    limit = std::min<std::uint64_t>(limit, cache.max_append() - 1);
    auto& controller = seq_->controller(spec_mode_);
    if (spec_mode_ == speculative_mode::lookup) {
        controller.expect_shadow();
    }
    const bool adaptive = req_.speculative.adaptive.value_or(owner().options().draft_adaptive);
    const auto k = adaptive ? controller.next_k(static_cast<std::uint32_t>(limit)) : static_cast<std::uint32_t>(limit);
    // Streamed, the length the controller chose is fitted to the drafts' own expected reads (fit): lookup drafts
    // cost nothing, so up to the limit are made for it to choose from.
    const bool costed = adaptive && cache.keeps_routing();
    if (k == 0) {
        if (spec_mode_ == speculative_mode::lookup) {
            // A lookup draft costs nothing to make: the plain step checks it against the token it produces, so the
            // acceptance estimate follows the text while drafting is off (speculation::draft_controller).
            speculation::lookup_draft(draft_context(), 1, drafts_);
            shadow_draft_ = drafts_.empty() ? -1 : drafts_.front();
        }
        co_return false;
    }
    const auto t0 = clock_type::now();
    const auto context = draft_context();
    if (spec_mode_ != speculative_mode::lookup) {
        seq_->runner_.step_away(cache); // drafting runs passes of its own first
    }
    if (spec_mode_ == speculative_mode::lookup) {
        speculation::lookup_draft(context, costed && controller.chose() ? static_cast<std::uint32_t>(limit) : k,
                                  drafts_);
    } else if (spec_mode_ == speculative_mode::mtp) {
        if (!seq_->mtp_) {
            seq_->mtp_ =
                std::make_unique<speculation::mtp_runner>(*owner().mtp(), owner().pool(), cache.capacity(),
                                                          std::max(1u, owner().options().n_batch), cache.type());
        }
        if (auto r = co_await seq_->mtp_->propose(context, cache, k, drafts_); !r) {
            spec_mode_ = speculative_mode::off; // the block failed: the target goes on alone
            co_return false;
        }
    } else {
        if (!seq_->draft_) {
            seq_->draft_ = std::make_unique<speculation::draft_runner>(owner().draft(), cache.capacity());
        }
        if (auto r = co_await seq_->draft_->propose(context, k, drafts_); !r) {
            spec_mode_ = speculative_mode::off; // the draft failed: the target goes on alone
            co_return false;
        }
    }
    if (drafts_.empty()) {
        co_return false;
    }
    const double draft_ms = ms_since(t0);
    double predicted = -1.0;
    if (cache.keeps_routing()) {
        // The experts each of the step's tokens (the last one, then the drafts) is predicted to choose, looked up once
        // for the positions' costs and the prefetch.
        const auto& hp = owner().hparams();
        auto& tokens = prefetch_tokens_;
        tokens.assign(1, generated_.back());
        tokens.insert(tokens.end(), drafts_.begin(), drafts_.end());
        speculation::latest_routing_rows(cache, seq_->history_, tokens, rows_);
        // Each position's expected reads, before the prefetch below puts them in flight.
        speculation::predicted_misses(owner().experts(), rows_, hp.n_layer, hp.n_expert_used, misses_);
        const auto fitted = costed ? controller.fit(misses_) : static_cast<std::uint32_t>(drafts_.size());
        if (fitted == 0) {
            if (spec_mode_ == speculative_mode::lookup) {
                shadow_draft_ = drafts_.front(); // the plain step checks it, as when the controller chose no draft
            }
            co_return false;
        }
        drafts_.resize(fitted);
        rows_.resize(fitted + 1);
        predicted = 0.0;
        for (std::size_t i = 0; i <= fitted && predicted >= 0.0; ++i) {
            predicted = misses_[i] < 0.0 ? -1.0 : predicted + misses_[i];
        }
        if (owner().options().draft_prefetch) {
            // Draft-guided prefetch: the step's tokens' likely experts start reading before the verification needs
            // them, at most a quarter of the expert cache (more would evict what the pass itself is about to use).
            co_await speculation::prefetch_draft_experts(owner().experts(), rows_, hp.n_layer, hp.n_expert_used,
                                                         owner().plan().cache_slots / 4);
        }
    }
    const auto reads0 = expert_reads();
    const double wait0 = seq_->engine_->counters().expert_wait_s;
    const auto t1 = clock_type::now();
    speculation::verify_target target{seq_->runner_,     cache,          seq_->history_, sampler_, owner().vocab(),
                                      req_.top_logprobs, req_.ignore_eos};
    auto accepted = co_await speculation::verify(target, generated_.back(), drafts_, logits_, verified_);
    if (!accepted) {
        co_return accepted.error();
    }
    const double verify_ms = ms_since(t1);
    summary_.verify_ms += verify_ms;
    const double verify_wait_ms = 1000.0 * (seq_->engine_->counters().expert_wait_s - wait0);
    summary_.verify_wait_ms += verify_wait_ms;
    summary_.steps.push_back({static_cast<std::uint32_t>(drafts_.size() + 1), *accepted, verify_ms, verify_wait_ms,
                              expert_reads() - reads0, predicted});
    const bool rejected = *accepted < drafts_.size() && verified_.size() == *accepted + 1 &&
                          verified_.back().chosen.token != drafts_[*accepted];
    // The draft's catch-up on a new prompt (or a stretch without drafting) is paid once, whatever the length: the
    // controller leaves it out. Its catch-up on the last step's final tokens (1 or 2) is paid every step: counted.
    double catch_up_ms = 0.0;
    if (spec_mode_ == speculative_mode::draft && seq_->draft_->catch_up_tokens() > 2) {
        catch_up_ms = seq_->draft_->catch_up_ms();
    } else if (spec_mode_ == speculative_mode::mtp) {
        catch_up_ms = seq_->mtp_->catch_up_ms();
    }
    controller.record_verify(static_cast<std::uint32_t>(drafts_.size()), *accepted, rejected, verify_ms,
                             std::max(0.0, draft_ms - catch_up_ms), verify_wait_ms, predicted);
    auto& counters = owner().speculation();
    counters.verify_steps.fetch_add(1, std::memory_order_relaxed);
    counters.drafted.fetch_add(drafts_.size(), std::memory_order_relaxed);
    counters.accepted.fetch_add(*accepted, std::memory_order_relaxed);
    counters.verify_tokens.fetch_add(verified_.size(), std::memory_order_relaxed);
    counters.verify_expert_reads.fetch_add(expert_reads() - reads0, std::memory_order_relaxed);
    summary_.drafted_tokens += static_cast<std::uint32_t>(drafts_.size());
    summary_.accepted_tokens += *accepted;
    ++summary_.verify_steps;
    summary_.draft_ms += draft_ms;
    ready_ms_ = ms_since(t0) / static_cast<double>(verified_.size());
    for (auto& v : verified_) {
        ready_.push_back(std::move(v));
    }
    co_return true;
}

// Grammar work runs on the compute pool, never on the io_context thread: building the vocabulary trie (once per
// model, about 0.1 s at 150k tokens) and the masks (a walk of the trie, up to tens of ms for a bounded string).
boost::asio::awaitable<result<void>> token_stream::state::start_grammar() {
    if (req_.grammar.empty()) {
        co_return result<void>{};
    }
    auto g = grammar::parse_gbnf(req_.grammar);
    if (!g) {
        co_return g.error().with_context("grammar");
    }
    std::shared_ptr<const grammar::token_trie> trie;
    co_await owner().pool().run(1, [this, &trie](std::size_t) noexcept { trie = owner().token_trie(); });
    if (auto refs = grammar::check_token_refs(**g, *trie); !refs) {
        co_return refs.error().with_context("grammar");
    }
    grammar_.emplace(std::move(*g), std::move(trie));
    if (grammar_->state().current() == grammar::matcher::dead) {
        co_return make_error(std::errc::invalid_argument, "grammar: the root rule matches nothing");
    }
    co_return result<void>{};
}

boost::asio::awaitable<void> token_stream::state::mask_on_pool() {
    co_await owner().pool().run(1, [this](std::size_t) noexcept { (void)grammar_->allowed(); });
}

std::optional<runtime::sampled_token> token_stream::state::sample(std::vector<token_logprob>& top) {
    if (!grammar_) {
        return sampler_.sample_detailed(logits_, req_.top_logprobs, top);
    }
    const auto& mask = grammar_->allowed();
    masked_.resize(logits_.size());
    const std::int32_t first_allowed = mask.apply(logits_, masked_);
    if (first_allowed < 0) {
        return std::nullopt;
    }
    auto chosen = sampler_.sample_detailed(masked_, logits_, req_.top_logprobs, top);
    if (!mask.allows(chosen.token)) {
        // Every allowed logit was -inf or NaN and the sampler fell back to the raw argmax.
        chosen.token = first_allowed;
        chosen.logprob = -std::numeric_limits<float>::infinity();
    }
    return chosen;
}

result<std::optional<token_event>> token_stream::state::fail(error e, bool was_cancelled) {
    ended_ = true;
    if (was_cancelled) {
        summary_.finished = true;
        summary_.reason = finish_reason::cancelled;
        return std::optional<token_event>{};
    }
    return e;
}

std::optional<token_event> token_stream::state::finish(finish_reason reason) {
    ended_ = true;
    seq_->save_checkpoint(); // the generation's end: the next prompt usually repeats it
    summary_.finished = true;
    summary_.reason = reason;
    if (reason == finish_reason::cancelled) {
        // The consumer is going away: held-back text is dropped, and nothing more is awaited from it (asio
        // throws operation_aborted at its next co_await once cancelled).
        return std::nullopt;
    }
    std::string tail = stops_.stopped() ? std::string() : stops_.push(decoder_ ? decoder_->flush() : "").emit;
    if (!stops_.stopped()) {
        tail += stops_.flush();
        if (stops_.stopped()) {
            summary_.reason = finish_reason::stop;
            summary_.stopped_by = stops_.matched();
        }
    }
    if (tail.empty()) {
        return std::nullopt;
    }
    token_event ev;
    ev.text = std::move(tail);
    return ev;
}

std::optional<token_event> token_stream::state::emit(const runtime::sampled_token& chosen,
                                                     std::vector<token_logprob> top, double ms,
                                                     bool accepted_by_sampler) {
    // Under a grammar an end-of-generation token is only allowed once the document is complete, so it ends
    // the generation even with ignore_eos.
    if ((!req_.ignore_eos || grammar_) && owner().vocab().is_end_of_generation(chosen.token)) {
        return finish(finish_reason::stop);
    }
    return take_token(chosen.token, chosen.logprob, std::move(top), ms, accepted_by_sampler);
}

std::optional<token_event> token_stream::state::take_token(std::int32_t token, float logprob,
                                                           std::vector<token_logprob> top, double ms,
                                                           bool accepted_by_sampler) {
    if (!accepted_by_sampler) {
        sampler_.accept(token);
    }
    if (grammar_) {
        const bool ok = grammar_->accept(token);
        assert(ok); // the token was sampled from the mask
        (void)ok;
        // Cheap: a complete document usually has nothing left to match; else the next mask, computed (on the
        // pool) before it is needed, is cached for the next step.
        grammar_done_ = grammar_->is_complete() && !grammar_->state().can_continue(grammar_->state().current());
    }
    generated_.push_back(token);
    ++summary_.completion_tokens;
    token_event ev;
    ev.token = token;
    ev.logprob = logprob;
    ev.top = std::move(top);
    ev.ms = ms;
    auto step = stops_.push(decoder_->push(token));
    ev.text = std::move(step.emit);
    if (step.stopped) {
        ended_ = true;
        summary_.finished = true;
        summary_.reason = finish_reason::stop;
        summary_.stopped_by = stops_.matched();
    }
    return ev;
}

boost::asio::awaitable<result<std::optional<token_event>>> token_stream::next() {
    // Cancellation must end the stream cleanly rather than throw out of a compute step, so this coroutine
    // chain stops throwing on cancellation while a step runs and gets the caller's setting back afterwards.
    const bool throws = co_await boost::asio::this_coro::throw_if_cancelled();
    co_await boost::asio::this_coro::throw_if_cancelled(false);
    auto r = co_await state_->next_step();
    co_await boost::asio::this_coro::throw_if_cancelled(throws);
    co_return r;
}

boost::asio::awaitable<result<std::optional<token_event>>> token_stream::state::next_step() {
    if (ended_) {
        co_return std::optional<token_event>{};
    }
    const auto t0 = clock_type::now();
    if (!started_) {
        if (auto r = co_await start(); !r) {
            // (GCC 12: no temporaries in a co_await's operands, so the error is taken apart first.)
            const bool was_cancelled = co_await cancelled();
            co_return fail(r.error(), was_cancelled);
        }
    }
    if (co_await cancelled()) {
        co_return finish(finish_reason::cancelled);
    }
    if (grammar_ && !grammar_done_ && grammar_->is_complete()) {
        co_await mask_on_pool(); // complete; done when the mask allows nothing but end-of-generation
        grammar_done_ = grammar_->only_end_remains();
    }
    if (grammar_done_) {
        co_return finish(finish_reason::stop); // the document is complete: no step for end-of-generation
    }
    if (req_.max_tokens != 0 && summary_.completion_tokens >= req_.max_tokens) {
        co_return finish(finish_reason::length);
    }
    if (!ready_.empty()) { // verified by the last speculative step
        auto v = std::move(ready_.front());
        ready_.pop_front();
        co_return emit(v.chosen, std::move(v.top), ready_ms_, true);
    }
    if (!pending_) {
        auto& cache = seq_->cache_;
        if (cache.size() >= cache.capacity()) {
            co_return finish(finish_reason::context_full);
        }
        if (spec_mode_ != speculative_mode::off) {
            auto drafted = co_await speculate();
            if (!drafted) {
                seq_->drop_partial_step();
                const bool was_cancelled = co_await cancelled();
                co_return fail(drafted.error(), was_cancelled);
            }
            if (*drafted) {
                summary_.decode_ms += ms_since(t0);
                auto v = std::move(ready_.front());
                ready_.pop_front();
                co_return emit(v.chosen, std::move(v.top), ready_ms_, true);
            }
        }
        const std::int32_t last = generated_.back();
        const auto reads0 = expert_reads();
        const double wait0 = seq_->engine_->counters().expert_wait_s;
        const auto t1 = clock_type::now();
        auto r = co_await seq_->runner_.forward(cache, std::span(&last, 1), models::logits_mode::last, logits_);
        if (!r) {
            seq_->drop_partial_step();
            const bool was_cancelled = co_await cancelled();
            co_return fail(r.error(), was_cancelled);
        }
        const double plain_ms = ms_since(t1);
        const double wait_ms = 1000.0 * (seq_->engine_->counters().expert_wait_s - wait0);
        if (spec_mode_ != speculative_mode::off) {
            seq_->controller(spec_mode_).record_plain(plain_ms, wait_ms);
        }
        if (summary_.completion_tokens > 0) { // the prompt's pass is not a decode step
            ++summary_.plain_steps;
            summary_.plain_ms += plain_ms;
            summary_.plain_wait_ms += wait_ms;
            summary_.steps.push_back({1, 0, plain_ms, wait_ms, expert_reads() - reads0});
        }
        auto& counters = owner().speculation();
        counters.plain_tokens.fetch_add(1, std::memory_order_relaxed);
        counters.plain_expert_reads.fetch_add(expert_reads() - reads0, std::memory_order_relaxed);
        seq_->history_.push_back(last);
        pending_ = true;
        if (co_await cancelled()) {
            co_return finish(finish_reason::cancelled);
        }
    }
    if (grammar_) {
        co_await mask_on_pool(); // sample() then finds it cached
    }
    std::vector<token_logprob> top;
    const auto chosen = sample(top);
    pending_ = false;
    if (shadow_draft_ >= 0 && chosen) {
        seq_->controller(spec_mode_).record_shadow(chosen->token == shadow_draft_);
    }
    shadow_draft_ = -1;
    const double ms = ms_since(t0);
    if (summary_.completion_tokens > 0 || !started_) {
        summary_.decode_ms += ms;
    }
    if (!chosen) {
        co_return finish(finish_reason::stop); // the grammar allows no token of this vocabulary
    }
    co_return emit(*chosen, std::move(top), ms, false);
}

} // namespace sluice
