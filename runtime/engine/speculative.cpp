// Speculative decoding: prompt lookup, the draft model's sequence, the draft-length controller and verification.
#include "runtime/engine/speculative.hpp"

#include "runtime/experts/expert_batch.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace sluice::speculation {

void lookup_draft(std::span<const std::int32_t> history, std::uint32_t k, std::vector<std::int32_t>& out,
                  std::uint32_t min_ngram, std::uint32_t max_ngram) {
    out.clear();
    const std::size_t len = history.size();
    for (std::size_t n = std::min<std::size_t>(max_ngram, len > 0 ? len - 1 : 0); n >= min_ngram && n > 0; --n) {
        const auto tail = history.subspan(len - n);
        // Latest start before the tail itself whose n tokens equal the tail and that has a token after it.
        for (std::size_t start = len - n; start-- > 0;) {
            if (!std::equal(tail.begin(), tail.end(), history.begin() + static_cast<std::ptrdiff_t>(start))) {
                continue;
            }
            // The copy goes on past the history's end into the drafts themselves (start + n < len, so each one
            // is written before it is read): a match just behind the tail, as in a repeating phrase, then drafts
            // the whole period again instead of stopping at the tail.
            for (std::size_t i = start + n; out.size() < k; ++i) {
                out.push_back(i < len ? history[i] : out[i - len]);
            }
            return;
        }
    }
}

std::int32_t argmax_token(std::span<const float> logits) noexcept {
    std::int32_t best = -1;
    float value = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < logits.size(); ++i) {
        if (logits[i] > value) {
            value = logits[i];
            best = static_cast<std::int32_t>(i);
        }
    }
    return best;
}

draft_runner::draft_runner(std::shared_ptr<model> draft, std::uint32_t n_ctx)
    : model_(std::move(draft)),
      cache_(models::cache_layout_of(model_->arch(), model_->hparams()), n_ctx,
             model_->options().kv_type == kv_cache_type::f32 ? kernels::quant_type::f32 : kernels::quant_type::f16,
             model_->options().n_batch),
      runner_(model_->arch(), model_->hparams(), model_->weights(), model_->pool(), model_->experts(),
              model_->options().n_batch) {}

boost::asio::awaitable<result<void>> draft_runner::catch_up(std::span<const std::int32_t> context) {
    if (context.empty() || context.size() >= cache_.capacity()) {
        co_return result<void>{};
    }
    std::size_t keep = 0;
    while (keep < history_.size() && keep < context.size() && history_[keep] == context[keep]) {
        ++keep;
    }
    if (keep == context.size() && keep == history_.size()) {
        co_return result<void>{};
    }
    if (!cache_.can_truncate(static_cast<std::uint32_t>(keep))) {
        keep = 0;
    }
    cache_.truncate(static_cast<std::uint32_t>(keep));
    history_.resize(keep);
    if (keep < context.size()) {
        auto r = co_await runner_.forward(cache_, context.subspan(keep), models::logits_mode::last, logits_);
        if (!r) {
            cache_.truncate(0);
            history_.clear();
            co_return r;
        }
        history_.insert(history_.end(), context.begin() + static_cast<std::ptrdiff_t>(keep), context.end());
    }
    co_return result<void>{};
}

boost::asio::awaitable<result<void>> draft_runner::propose(std::span<const std::int32_t> context, std::uint32_t k,
                                                           std::vector<std::int32_t>& out) {
    out.clear();
    catch_up_ms_ = 0.0;
    catch_up_tokens_ = 0;
    if (context.empty() || k == 0) {
        co_return result<void>{};
    }
    // Follow the target: keep the common prefix, always recomputing the context's last token for its logits.
    std::size_t keep = 0;
    while (keep < history_.size() && keep < context.size() && history_[keep] == context[keep]) {
        ++keep;
    }
    keep = std::min(keep, context.size() - 1);
    if (!cache_.can_truncate(static_cast<std::uint32_t>(keep))) {
        keep = 0; // a sliding-window ring no longer holds the window before `keep`
    }
    cache_.truncate(static_cast<std::uint32_t>(keep));
    history_.resize(keep);
    if (context.size() + k > cache_.capacity()) {
        co_return result<void>{}; // no room to draft: the target decodes plainly
    }
    const auto t0 = std::chrono::steady_clock::now();
    catch_up_tokens_ = context.size() - keep;
    auto r = co_await runner_.forward(cache_, context.subspan(keep), models::logits_mode::last, logits_);
    catch_up_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r) {
        cache_.truncate(0);
        history_.clear();
        co_return r;
    }
    history_.insert(history_.end(), context.begin() + static_cast<std::ptrdiff_t>(keep), context.end());
    for (std::uint32_t i = 0; i < k; ++i) {
        const std::int32_t token = argmax_token(logits_);
        if (token < 0) {
            break;
        }
        out.push_back(token);
        if (i + 1 == k || model_->vocab().is_end_of_generation(token)) {
            break;
        }
        r = co_await runner_.forward(cache_, std::span(&token, 1), models::logits_mode::last, logits_);
        if (!r) {
            cache_.truncate(0);
            history_.clear();
            co_return r;
        }
        history_.push_back(token);
    }
    co_return result<void>{};
}

namespace {

constexpr double decay = 0.95;             ///< acceptance counts fade, so the rate follows the text
constexpr std::uint32_t refresh = 16;      ///< a plain step at least this often while drafting (fresh plain costs)
constexpr std::uint32_t first_probe = 32;  ///< while off, a drafting step after this many plain ones, doubling
constexpr std::uint32_t last_probe = 1024; ///< each time the probe finds drafting still does not pay, up to this
constexpr std::uint32_t explore = 1;       ///< the draft length of measuring steps and probes
/// Below this acceptance of free drafts checked on plain steps, no drafting step is tried: one drafted token then
/// gives 1.5 tokens or fewer, which pays only if a verified position costs under half a plain step, and on this
/// project's machines it costs 0.4 (resident) to 1.5 (streamed, its experts read) plain steps.
constexpr double min_shadow_acceptance = 0.5;
/// From this acceptance of free drafts checked on plain steps, measuring steps and probes draft 3 tokens, not 1.
constexpr double trusted_shadow_acceptance = 0.75;

/// The lower median (of an even count, the smaller middle value): slow outliers are the common kind.
double median_of(double* values, std::size_t n) noexcept {
    if (n == 0) {
        return 0.0;
    }
    std::nth_element(values, values + (n - 1) / 2, values + n);
    return values[(n - 1) / 2];
}

} // namespace

void recent_median::add(double value) noexcept {
    values_[next_] = value;
    next_ = (next_ + 1) % size;
    count_ = std::min(count_ + 1, size);
}

double recent_median::median() const noexcept {
    double copy[size];
    std::copy_n(values_, count_, copy);
    return median_of(copy, count_);
}

double draft_controller::extra_ms() const noexcept {
    const double plain = plain_.median();
    double extra[recent_median::size];
    for (std::size_t i = 0; i < verify_count_; ++i) {
        extra[i] = (verify_ms_[i] - plain) / verify_len_[i];
    }
    return median_of(extra, verify_count_);
}

std::uint32_t draft_controller::next_k(std::uint32_t limit) {
    chosen_ = 0;
    if (limit == 0) {
        return 0;
    }
    if (plain_.count() == 0 || since_plain_ >= refresh) {
        return 0; // measure what one token costs first (and now and then again)
    }
    if ((shadowed_ || free_drafts_) && (!shadowed_ || acceptance() < min_shadow_acceptance) &&
        (verify_count_ < 3 || off_)) {
        return 0; // free drafts checked on plain steps say drafting would not pay: no measurement, no probe
    }
    if (verify_count_ < 3) {
        // A first measurement of drafting and verifying, three steps long so that one slow step cannot decide it,
        // each drafting one token: with streamed experts a drafted position can cost as much as a plain step (its
        // own experts read from disk), so a draft that does not pay must be found out cheaply.
        return explore_length(limit);
    }
    if (off_) {
        if (++since_probe_ < probe_every_) {
            return 0;
        }
        since_probe_ = 0;
        off_ = false;
        probing_ = true;
        return explore_length(limit);
    }
    const double wait = wait_.median();
    const std::uint32_t best = best_length(limit, [wait](std::uint32_t) { return wait; });
    off_ = best == 0;
    chosen_ = best;
    if (probing_) {
        // A probe that finds drafting still not paying waits twice as long for the next (a draft model catches
        // up on the tokens it missed at each probe, which costs); one that finds it paying starts over.
        probe_every_ = off_ ? std::min(probe_every_ * 2, last_probe) : first_probe;
        probing_ = false;
    }
    return best;
}

template <class Wait>
std::uint32_t draft_controller::best_length(std::uint32_t limit, Wait wait) const {
    // Expected tokens of a step drafting k with acceptance a: 1 + a + ... + a^k; its cost: a plain step's compute
    // and its last token's expert wait, plus per drafted position the extra compute, the drafting and its wait.
    const double a = std::clamp(acceptance(), 0.0, 0.999);
    const double per_token = std::max(0.0, extra_ms()) + std::max(0.0, draft_.median());
    double cost = plain_.median() + wait(0);
    std::uint32_t best = 0;
    double best_rate = 1.0 / cost;
    double expected = 1.0;
    double power = 1.0;
    for (std::uint32_t k = 1; k <= limit; ++k) {
        power *= a;
        expected += power;
        cost += per_token + wait(k);
        const double rate = expected / cost;
        if (rate > best_rate * 1.02) {
            best_rate = rate;
            best = k;
        }
    }
    return best;
}

double draft_controller::wait_per_read() const noexcept {
    if (predicted_count_ < 3) {
        return -1.0;
    }
    double wait = 0.0;
    double reads = 0.0;
    for (std::size_t i = 0; i < predicted_count_; ++i) {
        wait += predicted_wait_[i];
        reads += predicted_reads_[i];
    }
    return reads > 0.0 ? wait / reads : -1.0;
}

std::uint32_t draft_controller::fit(std::span<const double> misses) const {
    const auto drafted = static_cast<std::uint32_t>(misses.empty() ? 0 : misses.size() - 1);
    const double per_read = wait_per_read();
    if (chosen_ == 0 || per_read < 0.0) {
        return chosen_ == 0 ? drafted : std::min(drafted, chosen_);
    }
    const double wait = wait_.median();
    return best_length(drafted, [&](std::uint32_t i) { return misses[i] >= 0.0 ? misses[i] * per_read : wait; });
}

std::uint32_t draft_controller::explore_length(std::uint32_t limit) const noexcept {
    // Free drafts that plain steps found right most of the time are measured at a useful length at once.
    return shadowed_ && acceptance() >= trusted_shadow_acceptance ? std::min(limit, 3u) : std::min(limit, explore);
}

void draft_controller::record_shadow(bool accepted) {
    shadowed_ = true;
    accepted_ = accepted_ * decay + (accepted ? 1.0 : 0.0);
    tried_ = tried_ * decay + 1.0;
}

void draft_controller::record_plain(double ms, double wait_ms) {
    since_plain_ = 0;
    if (!warm_) {
        warm_ = true; // a session's first step runs cold (first touch of buffers): an outlier that makes drafting
        return;       // look free
    }
    plain_.add(std::max(0.0, ms - wait_ms));
}

void draft_controller::record_verify(std::uint32_t drafted, std::uint32_t accepted, bool rejected, double verify_ms,
                                     double draft_ms, double wait_ms, double predicted_reads) {
    ++since_plain_;
    if (drafted == 0) {
        return;
    }
    accepted_ = accepted_ * decay + accepted;
    tried_ = tried_ * decay + accepted + (rejected ? 1.0 : 0.0);
    verify_ms_[verify_next_] = std::max(0.0, verify_ms - wait_ms);
    wait_.add(std::max(0.0, wait_ms) / (drafted + 1));
    verify_len_[verify_next_] = drafted;
    verify_next_ = (verify_next_ + 1) % recent_median::size;
    verify_count_ = std::min(verify_count_ + 1, recent_median::size);
    draft_.add(std::max(draft_ms / drafted, 1e-6));
    if (predicted_reads >= 0.0) {
        predicted_wait_[predicted_next_] = std::max(0.0, wait_ms);
        predicted_reads_[predicted_next_] = predicted_reads;
        predicted_next_ = (predicted_next_ + 1) % recent_median::size;
        predicted_count_ = std::min(predicted_count_ + 1, recent_median::size);
    }
}

void latest_routing_rows(const models::kv_cache& cache, std::span<const std::int32_t> history,
                         std::span<const std::int32_t> tokens, std::vector<const std::int16_t*>& rows) {
    rows.assign(tokens.size(), nullptr);
    if (!cache.keeps_routing()) {
        return;
    }
    // Positions past the cache's size hold nothing yet.
    const std::size_t known = std::min<std::size_t>(history.size(), cache.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        for (std::size_t p = known; p-- > 0;) {
            if (history[p] == tokens[i]) {
                rows[i] = cache.routing_row(p);
                break;
            }
        }
    }
}

namespace {

/// Adds the experts `row` names for layer `il` to `ids` (unsorted, may repeat).
void add_layer_experts(const std::int16_t* row, std::uint32_t il, std::uint32_t top_k, std::vector<std::int32_t>& ids) {
    for (std::uint32_t j = 0; j < top_k; ++j) {
        if (const auto e = row[std::size_t{il} * top_k + j]; e >= 0) {
            ids.push_back(e);
        }
    }
}

} // namespace

void predicted_misses(const experts::expert_source& source, const models::kv_cache& cache,
                      std::span<const std::int32_t> history, std::span<const std::int32_t> tokens,
                      std::uint32_t n_layer, std::uint32_t top_k, std::vector<double>& out) {
    out.clear();
    if (!cache.keeps_routing()) {
        return;
    }
    std::vector<const std::int16_t*> rows;
    latest_routing_rows(cache, history, tokens, rows);
    predicted_misses(source, rows, n_layer, top_k, out);
}

void predicted_misses(const experts::expert_source& source, std::span<const std::int16_t* const> rows,
                      std::uint32_t n_layer, std::uint32_t top_k, std::vector<double>& out) {
    out.clear();
    for (const auto* row : rows) {
        out.push_back(row != nullptr ? 0.0 : -1.0); // a token not seen before has no prediction
    }
    std::vector<std::int32_t> before; // the experts of the layer that earlier tokens of the step named
    std::vector<std::int32_t> fresh;
    for (std::uint32_t il = 0; il < n_layer; ++il) {
        before.clear();
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (rows[i] == nullptr) {
                continue;
            }
            fresh.clear();
            add_layer_experts(rows[i], il, top_k, fresh);
            std::sort(fresh.begin(), fresh.end());
            fresh.erase(std::unique(fresh.begin(), fresh.end()), fresh.end());
            std::erase_if(fresh,
                          [&](std::int32_t e) { return std::find(before.begin(), before.end(), e) != before.end(); });
            if (fresh.empty()) {
                continue; // a dense layer, or nothing new
            }
            out[i] += static_cast<double>(source.count_missing(il, fresh));
            before.insert(before.end(), fresh.begin(), fresh.end());
        }
    }
}

boost::asio::awaitable<std::size_t> prefetch_draft_experts(experts::expert_source& source,
                                                           const models::kv_cache& cache,
                                                           std::span<const std::int32_t> history,
                                                           std::span<const std::int32_t> tokens, std::uint32_t n_layer,
                                                           std::uint32_t top_k, std::size_t limit) {
    if (limit == 0 || !cache.keeps_routing() || !source.wants_prediction()) {
        co_return 0;
    }
    std::vector<const std::int16_t*> rows;
    latest_routing_rows(cache, history, tokens, rows);
    co_return co_await prefetch_draft_experts(source, rows, n_layer, top_k, limit);
}

boost::asio::awaitable<std::size_t> prefetch_draft_experts(experts::expert_source& source,
                                                           std::span<const std::int16_t* const> rows,
                                                           std::uint32_t n_layer, std::uint32_t top_k,
                                                           std::size_t limit) {
    const bool any = std::any_of(rows.begin(), rows.end(), [](const std::int16_t* row) { return row != nullptr; });
    if (limit == 0 || !any || !source.wants_prediction()) {
        co_return 0;
    }
    // No attach: the reads queue and start with the verification's own attach, right after this (attaching here
    // would set up and drop the source's reader around every step).
    experts::expert_batch batch;
    batch.reserve(rows.size() * top_k);
    batch.bind(co_await boost::asio::this_coro::executor);
    std::vector<std::int32_t> ids;
    std::size_t asked = 0;
    for (std::uint32_t il = 0; il < n_layer && asked < limit; ++il) {
        ids.clear();
        for (const auto* row : rows) {
            if (row != nullptr) { // a token not seen before predicts nothing
                add_layer_experts(row, il, top_k, ids);
            }
        }
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        ids.resize(std::min(ids.size(), limit - asked));
        if (ids.empty()) {
            continue; // a dense layer
        }
        source.prefetch(batch, il, ids); // the reads go on after the release: the batch only tracked them
        source.release_all(batch);
        asked += ids.size();
    }
    co_return asked;
}

boost::asio::awaitable<result<std::uint32_t>> verify(verify_target& t, std::int32_t last,
                                                     std::span<const std::int32_t> drafts, std::vector<float>& logits,
                                                     std::vector<verified_token>& out) {
    out.clear();
    std::vector<std::int32_t> tokens;
    tokens.reserve(drafts.size() + 1);
    tokens.push_back(last);
    tokens.insert(tokens.end(), drafts.begin(), drafts.end());
    const std::uint32_t base = t.cache.size();
    auto r = co_await t.runner.forward(t.cache, tokens, models::logits_mode::all, logits);
    if (!r) {
        co_return r.error();
    }
    const std::size_t n_vocab = logits.size() / tokens.size();
    std::uint32_t accepted = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const std::span<const float> row(logits.data() + i * n_vocab, n_vocab);
        verified_token v;
        bool took_draft = false;
        if (i < drafts.size()) {
            v.chosen = t.sampler.sample_against(row, drafts[i], took_draft, t.top_logprobs, v.top);
        } else {
            v.chosen = t.sampler.sample_detailed(row, t.top_logprobs, v.top);
        }
        t.sampler.accept(v.chosen.token);
        const bool ends = !t.ignore_eos && t.vocab.is_end_of_generation(v.chosen.token);
        out.push_back(std::move(v));
        accepted += took_draft ? 1 : 0;
        if (!took_draft || ends) {
            break; // a replaced draft, or the end of the generation (accepted or not)
        }
    }
    // Keep `last` and the accepted drafts; the last token emitted goes in with the next step.
    t.cache.truncate(base + 1 + accepted);
    t.history.insert(t.history.end(), tokens.begin(), tokens.begin() + 1 + accepted);
    co_return accepted;
}

} // namespace sluice::speculation
