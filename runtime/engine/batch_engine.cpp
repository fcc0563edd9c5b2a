// The batch engine's queue and step loop.
#include "runtime/engine/batch_engine.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <exception>

namespace sluice {

namespace asio = boost::asio;

namespace {

// How long a step waits for the sequences the last step completed to queue their next token: at least this, and up
// to an eighth of the last step's time (each sequence samples its token and writes it out on the io_context first,
// one after another: a step of many sequences that started without its stragglers would leave them for the next
// step, and the two halves would then alternate, each sequence getting a token every two steps).
constexpr auto gather_wait = std::chrono::microseconds(1500);
constexpr int gather_share_of_step = 8;

} // namespace

std::vector<step_share> plan_step(std::span<const step_candidate> queue, std::uint32_t budget,
                                  std::size_t max_sequences) {
    std::vector<step_share> out;
    std::uint32_t left = budget;
    std::vector<bool> taken(queue.size(), false);
    // Decode steps first: a running generation's next token never waits behind a prompt.
    for (std::size_t i = 0; i < queue.size() && left > 0 && out.size() < max_sequences; ++i) {
        if (queue[i].remaining == 1) {
            out.push_back({i, 1});
            taken[i] = true;
            --left;
        }
    }
    // Then prompt chunks, oldest first.
    for (std::size_t i = 0; i < queue.size() && left > 0 && out.size() < max_sequences; ++i) {
        if (taken[i] || queue[i].remaining == 0) {
            continue;
        }
        const std::uint32_t n = std::min({queue[i].remaining, std::max(queue[i].max_chunk, 1u), left});
        out.push_back({i, n});
        left -= n;
    }
    std::sort(out.begin(), out.end(), [](const step_share& a, const step_share& b) { return a.index < b.index; });
    return out;
}

batch_engine::batch_engine(const models::architecture& arch, const models::model_hparams& hp,
                           const models::model_weights& w, runtime::compute_pool& pool, experts::expert_source& experts,
                           std::uint32_t max_batch, experts::routing_log* routing)
    : runner_(arch, hp, w, pool, experts, max_batch),
      prefill_runner_(arch, hp, w, pool, experts, std::min(std::max(max_batch, 1u), prefill_step_tokens)),
      // A step of many sequences prefetches at most eight tokens' worth of distinct experts for the next layer.
      prediction_limit_(8 * std::max<std::uint32_t>(hp.n_expert_used, 1)), one_sequence_per_step_(routing != nullptr) {
    runner_.set_routing(routing);
}

batch_engine::~batch_engine() = default;

batch_engine_counters batch_engine::counters() const {
    const std::lock_guard lock(mu_);
    return counters_;
}

void batch_engine::publish(const shared_sequence* s) {
    const std::lock_guard lock(mu_);
    published_.push_back(s);
}

void batch_engine::withdraw(const shared_sequence* s) {
    const std::lock_guard lock(mu_);
    std::erase(published_, s);
    std::erase(away_, s->cache);
}

std::pair<const shared_sequence*, std::size_t> batch_engine::longest_prefix(std::span<const std::int32_t> prompt,
                                                                            const shared_sequence* self) const {
    const std::lock_guard lock(mu_);
    std::pair<const shared_sequence*, std::size_t> best{nullptr, 0};
    for (const auto* s : published_) {
        if (s == self) {
            continue;
        }
        const auto& h = *s->history;
        const std::size_t limit = std::min({h.size(), prompt.size(), std::size_t{s->cache->size()}});
        std::size_t n = 0;
        while (n < limit && h[n] == prompt[n]) {
            ++n;
        }
        if (n > best.second) {
            best = {s, n};
        }
    }
    return best;
}

void batch_engine::finish(request& r, result<void> outcome) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), &r));
    r.finished = true;
    r.outcome = std::move(outcome);
    r.done_event.set();
}

asio::awaitable<result<void>> batch_engine::forward(models::kv_cache& cache, std::span<const std::int32_t> tokens,
                                                    models::logits_mode mode, std::vector<float>& logits, bool prompt) {
    if (auto ok = runner_.check(cache, tokens); !ok) {
        co_return ok;
    }
    const auto n_vocab = std::size_t{runner_.hparams().n_vocab};
    logits.resize((mode == models::logits_mode::all ? tokens.size() : 1) * n_vocab);
    const auto executor = co_await asio::this_coro::executor;
    request req(executor);
    req.cache = &cache;
    req.tokens = tokens;
    req.mode = mode;
    req.logits = &logits;
    req.prompt = prompt;
    req.queued = std::chrono::steady_clock::now();
    {
        const std::lock_guard lock(mu_);
        std::erase(away_, &cache);
        queue_.push_back(&req);
        if (!running_) {
            running_ = true;
            executor_ = executor;
            asio::co_spawn(executor, run_steps(shared_from_this()),
                           asio::bind_cancellation_slot(step_cancel_.slot(), asio::detached));
        } else if (!in_step_.empty() && fits_prefill_step(req)) {
            prefill_waiting_.store(true, std::memory_order_release); // the step makes way at its next layer
        }
    }
    auto [ec] = co_await req.done_event.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) { // cancelled: out of the queue now, or at the end of the step that holds it
        bool wait_for_step = false;
        {
            const std::lock_guard lock(mu_);
            if (!req.finished) {
                if (req.in_step) {
                    req.cancelled = true;
                    wait_for_step = true;
                    cancel_step_if_abandoned();
                } else {
                    finish(req, make_error(std::errc::operation_canceled, "the request was cancelled"));
                }
            }
        }
        while (wait_for_step) {
            auto [ec2] = co_await req.done_event.async_wait(
                asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(asio::use_awaitable)));
            (void)ec2;
            const std::lock_guard lock(mu_);
            wait_for_step = !req.finished;
        }
    }
    const std::lock_guard lock(mu_);
    co_return std::move(req.outcome);
}

void batch_engine::step_away(const models::kv_cache& cache) {
    const std::lock_guard lock(mu_);
    if (std::find(away_.begin(), away_.end(), &cache) == away_.end()) {
        away_.push_back(&cache);
    }
}

void batch_engine::cancel_step_if_abandoned() {
    const bool abandoned = std::all_of(in_step_.begin(), in_step_.end(), [](const request* r) { return r->cancelled; });
    if (!abandoned || in_step_.empty()) {
        return;
    }
    asio::post(executor_, [this, id = step_id_] {
        const std::lock_guard lock(mu_);
        const bool still = step_id_ == id && !in_step_.empty() &&
                           std::all_of(in_step_.begin(), in_step_.end(), [](const request* r) { return r->cancelled; });
        if (still) {
            step_cancel_.emit(asio::cancellation_type::terminal);
        }
    });
}

bool batch_engine::fits_prefill_step(const request& r) const noexcept {
    return !one_sequence_per_step_ && r.prompt && r.done == 0 && !r.in_step && !r.cancelled &&
           r.tokens.size() <= prefill_runner_.max_batch() &&
           r.tokens.size() <= std::max<std::uint32_t>(r.cache->max_append(), 1);
}

bool batch_engine::wanted() const noexcept {
    return prefill_waiting_.load(std::memory_order_acquire);
}

asio::awaitable<void> batch_engine::run() {
    std::vector<request*> chosen;
    std::vector<models::forward_runner::sequence_step> steps;
    {
        const std::lock_guard lock(mu_);
        prefill_waiting_.store(false, std::memory_order_relaxed);
        std::size_t left = prefill_runner_.max_batch();
        for (auto* r : queue_) {
            if (!fits_prefill_step(*r) || r->tokens.size() > left) {
                continue;
            }
            left -= r->tokens.size();
            const auto n = static_cast<std::uint32_t>(r->tokens.size());
            models::forward_runner::sequence_step st;
            st.cache = r->cache;
            st.tokens = r->tokens;
            st.logits = r->logits->data();
            st.logits_first = r->mode == models::logits_mode::all ? 0 : n - 1;
            st.logits_count = r->mode == models::logits_mode::all ? n : 1;
            steps.push_back(st);
            r->in_step = true;
            chosen.push_back(r);
            in_step_.push_back(r);
        }
    }
    if (chosen.empty()) {
        co_return;
    }
    result<void> outcome;
    const auto start = std::chrono::steady_clock::now();
    const double waited_before = prefill_runner_.expert_wait_seconds();
    try {
        outcome = co_await prefill_runner_.forward_step(steps, steps.size() > 1 ? prediction_limit_ : 0);
    } catch (const std::exception& e) {
        outcome = make_error(std::errc::io_error, std::string("prefill step: ") + e.what());
    }
    const std::lock_guard lock(mu_);
    counters_.prefill_step_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    counters_.prefill_expert_wait_s += prefill_runner_.expert_wait_seconds() - waited_before;
    for (const auto* r : chosen) {
        counters_.prefill_queue_s += std::chrono::duration<double>(start - r->queued).count();
    }
    if (outcome) {
        ++counters_.prefill_steps;
    }
    for (auto* r : chosen) {
        std::erase(in_step_, r);
        r->in_step = false;
        if (!outcome) {
            finish(*r, outcome.error());
            continue;
        }
        r->done = r->tokens.size();
        counters_.tokens += r->tokens.size();
        counters_.prefill_tokens += r->tokens.size();
        finish(*r, result<void>{});
    }
}

asio::awaitable<void> batch_engine::run_steps(std::shared_ptr<batch_engine> self) {
    (void)self; // held by the frame
    // A step cancelled because every sequence in it left ends with an error from its expert wait, not a throw.
    co_await asio::this_coro::throw_if_cancelled(false);
    const auto executor = co_await asio::this_coro::executor;
    const auto n_vocab = std::size_t{runner_.hparams().n_vocab};
    std::vector<step_candidate> candidates;
    std::vector<step_share> shares;
    std::vector<request*> chosen;
    std::vector<models::forward_runner::sequence_step> steps;
    std::vector<const models::kv_cache*> expected; // sequences the last step completed: usually back for more
    std::chrono::steady_clock::duration last_step{};
    while (true) {
        // Let the sequences woken by the last step queue their next token before this step is planned: they run on
        // this executor (sampling, a socket write) and come back within a few rounds of it, unless they ended.
        const auto gather_start = std::chrono::steady_clock::now();
        const auto deadline =
            gather_start + std::max<std::chrono::steady_clock::duration>(gather_wait, last_step / gather_share_of_step);
        while (true) {
            co_await asio::post(executor, asio::use_awaitable);
            if (expected.empty() || std::chrono::steady_clock::now() >= deadline) {
                break;
            }
            const std::lock_guard lock(mu_);
            const bool all_back = std::all_of(expected.begin(), expected.end(), [&](const models::kv_cache* c) {
                return std::find(away_.begin(), away_.end(), c) != away_.end() ||
                       std::any_of(queue_.begin(), queue_.end(), [&](const request* r) { return r->cache == c; });
            });
            if (all_back) {
                break;
            }
        }
        expected.clear();
        const auto gather_end = std::chrono::steady_clock::now();
        co_await run(); // new prompts that fit a prefill step go first: their first token never waits for a step
        const auto step_start = std::chrono::steady_clock::now();
        {
            const std::lock_guard lock(mu_);
            counters_.gather_s += std::chrono::duration<double>(gather_end - gather_start).count();
            for (std::size_t i = 0; i < queue_.size();) {
                if (queue_[i]->cancelled) {
                    finish(*queue_[i], make_error(std::errc::operation_canceled, "the request was cancelled"));
                } else {
                    ++i;
                }
            }
            if (queue_.empty()) {
                running_ = false;
                co_return;
            }
            candidates.clear();
            for (const auto* r : queue_) {
                candidates.push_back({static_cast<std::uint32_t>(r->tokens.size() - r->done),
                                      std::max<std::uint32_t>(r->cache->max_append(), 1)});
            }
            shares = plan_step(candidates, runner_.max_batch(), one_sequence_per_step_ ? 1 : queue_.size());
            chosen.clear();
            steps.clear();
            ++step_id_;
            for (const auto& sh : shares) {
                auto& r = *queue_[sh.index];
                r.in_step = true;
                chosen.push_back(&r);
                models::forward_runner::sequence_step st;
                st.cache = r.cache;
                st.tokens = r.tokens.subspan(r.done, sh.tokens);
                if (r.mode == models::logits_mode::all) {
                    st.logits_first = 0;
                    st.logits_count = sh.tokens;
                    st.logits = r.logits->data() + r.done * n_vocab;
                } else if (r.done + sh.tokens == r.tokens.size()) {
                    st.logits_first = sh.tokens - 1;
                    st.logits_count = 1;
                    st.logits = r.logits->data();
                }
                steps.push_back(st);
            }
            in_step_ = chosen;
        }
        result<void> outcome;
        const double waited_before = runner_.expert_wait_seconds();
        try {
            outcome = co_await runner_.forward_step(steps, steps.size() > 1 ? prediction_limit_ : 0, this);
        } catch (const std::exception& e) {
            outcome = make_error(std::errc::io_error, std::string("forward step: ") + e.what());
        }
        co_await asio::this_coro::reset_cancellation_state();
        co_await asio::this_coro::throw_if_cancelled(false);
        const std::lock_guard lock(mu_);
        in_step_.clear();
        last_step = std::chrono::steady_clock::now() - step_start;
        counters_.step_s += std::chrono::duration<double>(last_step).count();
        counters_.expert_wait_s += runner_.expert_wait_seconds() - waited_before;
        if (outcome) {
            ++counters_.steps;
            counters_.sequence_rows += steps.size();
            counters_.widest_step = std::max(counters_.widest_step, static_cast<std::uint32_t>(steps.size()));
        }
        for (std::size_t i = 0; i < chosen.size(); ++i) {
            auto& r = *chosen[i];
            r.in_step = false;
            if (!outcome) {
                finish(r, outcome.error());
                continue;
            }
            r.done += steps[i].tokens.size();
            counters_.tokens += steps[i].tokens.size();
            if (r.done == r.tokens.size()) {
                expected.push_back(r.cache);
                finish(r, result<void>{});
            } else if (r.cancelled) {
                finish(r, make_error(std::errc::operation_canceled, "the request was cancelled"));
            }
        }
    }
}

} // namespace sluice
