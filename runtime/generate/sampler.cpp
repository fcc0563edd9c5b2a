// Token sampler: penalties, greedy and the filtered, seeded draw (sampler.hpp gives the order of the steps).
#include "runtime/generate/sampler.hpp"

#include "kernels/logits.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace sluice::runtime {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();
constexpr float pos_inf = std::numeric_limits<float>::infinity();

error bad_field(const char* field, const char* rule, double value) {
    char number[48];
    std::snprintf(number, sizeof number, "%g", value);
    return make_error(std::errc::invalid_argument, std::string(field) + " must be " + rule + ", got " + number);
}

bool in_closed(float v, float lo, float hi) {
    return v >= lo && v <= hi;
} // false for NaN

/// Index of the largest value (NaN never wins; ties go to the lowest index) and whether any value is > -inf.
std::size_t argmax(const float* l, std::size_t n, bool& found) {
    return kernels::first_argmax(l, n, found);
}

/// log softmax of the raw logits, NaN counted as -inf; +inf logits share all the mass equally.
class raw_log_softmax {
public:
    // Two vectorised passes (kernels/logits.hpp): the maximum, then the sum of exponentials, each term in float and
    // the sum in double (within 1e-6 relative of a double exp per token, which took about 1 ms at 150k tokens).
    explicit raw_log_softmax(std::span<const float> l) {
        const float top = kernels::max_value(l.data(), l.size());
        max_ = top;
        if (!(top > neg_inf))
            return;
        if (top == pos_inf) {
            log_sum_ = std::log(static_cast<double>(std::count(l.begin(), l.end(), pos_inf)));
            return;
        }
        log_sum_ = std::log(kernels::sum_exp(l.data(), l.size(), top));
    }

    float operator()(float v) const {
        if (!(v > neg_inf) || !(max_ > neg_inf) || (max_ == pos_inf && v != pos_inf))
            return neg_inf;
        if (max_ == pos_inf)
            return static_cast<float>(-log_sum_);
        return static_cast<float>(static_cast<double>(v) - max_ - log_sum_);
    }

private:
    double max_ = neg_inf;
    double log_sum_ = 0.0;
};

/// The `n_top` largest raw logits (NaN as -inf), value descending, ties by lowest id, as logprobs.
void fill_top(std::span<const float> l, const raw_log_softmax& lsm, std::size_t n_top,
              std::vector<token_logprob>& top) {
    top.clear();
    n_top = std::min(n_top, l.size());
    if (n_top == 0)
        return;
    const auto value = [](float v) { return v > neg_inf ? v : neg_inf; };
    for (std::size_t i = 0; i < l.size(); ++i) {
        const float v = value(l[i]);
        if (top.size() == n_top && !(v > top.back().logprob))
            continue;
        // Entries hold the raw logit until the end; equal values keep id order because ids only grow.
        auto at =
            std::upper_bound(top.begin(), top.end(), v, [](float x, const token_logprob& e) { return x > e.logprob; });
        top.insert(at, token_logprob{static_cast<std::int32_t>(i), v});
        if (top.size() > n_top)
            top.pop_back();
    }
    for (auto& e : top)
        e.logprob = lsm(e.logprob);
}

} // namespace

result<void> validate(const sampling_params& p) {
    if (!std::isfinite(p.temperature))
        return bad_field("temperature", "a finite number", p.temperature);
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        return bad_field("top_p", "in (0, 1]", p.top_p);
    if (!in_closed(p.min_p, 0.0f, 1.0f))
        return bad_field("min_p", "in [0, 1]", p.min_p);
    if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty))
        return bad_field("repeat_penalty", "a finite number > 0", p.repeat_penalty);
    if (p.repeat_last_n < -1)
        return bad_field("repeat_last_n", ">= -1", p.repeat_last_n);
    if (!in_closed(p.presence_penalty, -2.0f, 2.0f))
        return bad_field("presence_penalty", "in [-2, 2]", p.presence_penalty);
    if (!in_closed(p.frequency_penalty, -2.0f, 2.0f))
        return bad_field("frequency_penalty", "in [-2, 2]", p.frequency_penalty);
    return {};
}

xoshiro256ss::xoshiro256ss(std::uint64_t seed) {
    for (auto& word : s_) { // splitmix64
        seed += 0x9e3779b97f4a7c15ULL;
        std::uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        word = z ^ (z >> 31);
    }
}

std::uint64_t xoshiro256ss::next() {
    const std::uint64_t out = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return out;
}

double xoshiro256ss::uniform() {
    return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

sampler::sampler(const sampling_params& params, std::size_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    assert(validate(params));
    assert(n_vocab > 0);
    candidates_.reserve(n_vocab);
    if (penalties_on()) {
        scratch_.resize(n_vocab);
        counts_.assign(n_vocab, 0);
        position_.assign(n_vocab, -1);
        if (params_.repeat_last_n > 0)
            window_.reserve(static_cast<std::size_t>(params_.repeat_last_n));
    }
}

bool sampler::penalties_on() const {
    return params_.repeat_last_n != 0 &&
           (params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f);
}

void sampler::accept(std::int32_t token) {
    if (!penalties_on() || token < 0 || static_cast<std::size_t>(token) >= n_vocab_)
        return;
    if (params_.repeat_last_n > 0) {
        const auto capacity = static_cast<std::size_t>(params_.repeat_last_n);
        if (window_.size() < capacity) {
            window_.push_back(token);
        } else {
            forget(window_[window_head_]);
            window_[window_head_] = token;
            window_head_ = (window_head_ + 1) % capacity;
        }
    }
    if (counts_[token]++ == 0) {
        position_[token] = static_cast<std::int32_t>(active_.size());
        active_.push_back(token);
    }
}

void sampler::forget(std::int32_t token) {
    if (--counts_[token] != 0)
        return;
    const auto at = static_cast<std::size_t>(position_[token]);
    const std::int32_t last = active_.back();
    active_[at] = last;
    position_[last] = static_cast<std::int32_t>(at);
    active_.pop_back();
    position_[token] = -1;
}

void sampler::reset() {
    for (const std::int32_t id : active_) {
        counts_[id] = 0;
        position_[id] = -1;
    }
    active_.clear();
    window_.clear();
    window_head_ = 0;
    rng_ = xoshiro256ss(params_.seed);
}

const float* sampler::penalized(std::span<const float> logits) {
    if (active_.empty())
        return logits.data();
    if (scratch_.size() < logits.size())
        scratch_.resize(logits.size());
    std::copy(logits.begin(), logits.end(), scratch_.begin());
    const float rp = params_.repeat_penalty;
    for (const std::int32_t id : active_) {
        if (static_cast<std::size_t>(id) >= logits.size())
            continue;
        const auto count = static_cast<float>(counts_[id]);
        float l = scratch_[id];
        if (rp != 1.0f)
            l = l > 0.0f ? l / rp : l * rp;
        l -= count * params_.frequency_penalty + params_.presence_penalty;
        scratch_[id] = l;
    }
    return scratch_.data();
}

std::int32_t sampler::sample(std::span<const float> logits) {
    float probability = 0.0f;
    return choose(logits, probability);
}

sampled_token sampler::sample_detailed(std::span<const float> logits, std::size_t n_top,
                                       std::vector<token_logprob>& top) {
    return sample_detailed(logits, logits, n_top, top); // nothing masked: draw from the raw logits
}

sampled_token sampler::sample_detailed(std::span<const float> masked, std::span<const float> raw, std::size_t n_top,
                                       std::vector<token_logprob>& top) {
    assert(masked.size() == raw.size());
    sampled_token out;
    out.token = choose(masked, out.probability);
    const raw_log_softmax lsm(raw);
    out.logprob = lsm(raw[static_cast<std::size_t>(out.token)]);
    fill_top(raw, lsm, n_top, top);
    return out;
}

sampled_token sampler::sample_against(std::span<const float> logits, std::int32_t draft, bool& accepted,
                                      std::size_t n_top, std::vector<token_logprob>& top) {
    assert(logits.size() == n_vocab_);
    sampled_token out;
    const std::size_t n = logits.size();
    const float* l = penalized(logits);
    out.probability = 1.0f;
    bool found = false;
    bool chosen = false;
    accepted = false;
    if (params_.temperature <= 0.0f) {
        const std::size_t best = argmax(l, n, found);
        if (found) {
            out.token = static_cast<std::int32_t>(best);
            chosen = true;
        }
    } else if (const double total = filter_and_softmax(l, n); total > 0.0) {
        keep_top_p(total);
        double sum = 0.0;
        double p_draft = 0.0;
        auto at = candidates_.end();
        for (auto it = candidates_.begin(); it != candidates_.end(); ++it) {
            sum += it->value;
            if (it->id == draft) {
                p_draft = it->value;
                at = it;
            }
        }
        // Accept with probability p(draft) (the proposal had probability 1); else draw from p without it.
        if (at != candidates_.end() && rng_.uniform() * sum < p_draft) {
            out.token = draft;
            out.probability = static_cast<float>(p_draft / sum);
            accepted = true;
        } else {
            if (at != candidates_.end()) {
                candidates_.erase(at);
            }
            if (!candidates_.empty()) {
                out.token = candidates_[draw(out.probability)].id;
            } else {
                out.token = draft; // p(draft) was 1 up to rounding
                accepted = true;
            }
        }
        chosen = true;
    }
    if (!chosen) {
        out.token = static_cast<std::int32_t>(argmax(logits.data(), n, found)); // as choose() falls back
    }
    accepted = accepted || (params_.temperature <= 0.0f && out.token == draft) || (!chosen && out.token == draft);
    const raw_log_softmax lsm(logits);
    out.logprob = lsm(logits[static_cast<std::size_t>(out.token)]);
    fill_top(logits, lsm, n_top, top);
    return out;
}

std::int32_t sampler::choose(std::span<const float> logits, float& probability) {
    assert(logits.size() == n_vocab_);
    assert(!logits.empty());
    const std::size_t n = logits.size();
    const float* l = penalized(logits);
    probability = 1.0f;
    bool found = false;
    if (params_.temperature <= 0.0f) {
        const std::size_t best = argmax(l, n, found);
        if (found)
            return static_cast<std::int32_t>(best);
    } else if (const double total = filter_and_softmax(l, n); total > 0.0) {
        keep_top_p(total);
        return candidates_[draw(probability)].id;
    }
    // Every penalized logit is -inf or NaN: fall back to the raw argmax (the lowest id if that is empty too).
    return static_cast<std::int32_t>(argmax(logits.data(), n, found));
}

namespace {
bool better(const auto& a, const auto& b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
}
} // namespace

double sampler::filter_and_softmax(const float* l, std::size_t n) {
    candidates_.clear();
    const auto k = static_cast<std::size_t>(std::max(params_.top_k, 0));
    if (k == 0 || k >= n)
        return softmax_all(l, n);
    gather_top_k(l, n, k);
    const bool any_infinite =
        std::any_of(candidates_.begin(), candidates_.end(), [](const candidate& c) { return c.value == pos_inf; });
    if (any_infinite) {
        // +inf logits take all the mass, shared equally; everything finite gets none.
        std::erase_if(candidates_, [](const candidate& c) { return c.value != pos_inf; });
        for (auto& c : candidates_)
            c.value = 0.0f;
    }
    return candidates_.empty() ? 0.0 : softmax_and_min_p();
}

double sampler::softmax_all(const float* l, std::size_t n) {
    // Without top-k every token is a candidate: fuse softmax and min-p into one pass so that only the
    // survivors are stored (see softmax_and_min_p for why min-p may come before top-p).
    float max_value = neg_inf;
    for (std::size_t i = 0; i < n; ++i)
        max_value = l[i] > max_value ? l[i] : max_value;
    if (!(max_value > neg_inf))
        return 0.0;
    if (max_value == pos_inf) {
        for (std::size_t i = 0; i < n; ++i) {
            if (l[i] == pos_inf)
                candidates_.push_back(candidate{1.0f, static_cast<std::int32_t>(i)});
        }
        return static_cast<double>(candidates_.size());
    }
    const float t = params_.temperature;
    const float threshold = params_.min_p;
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!(l[i] > neg_inf))
            continue;
        const float p = std::exp((l[i] - max_value) / t);
        total += p;
        if (p > 0.0f && p >= threshold)
            candidates_.push_back(candidate{p, static_cast<std::int32_t>(i)});
    }
    return total;
}

void sampler::gather_top_k(const float* l, std::size_t n, std::size_t k) {
    // A heap of the k best so far whose front is the worst of them; ids only grow, so a value equal to the
    // front's never displaces it (ties keep the lowest ids). Most tokens cost one comparison.
    const auto cmp = [](const candidate& a, const candidate& b) { return better(a, b); };
    for (std::size_t i = 0; i < n; ++i) {
        const float v = l[i];
        if (!(v > neg_inf))
            continue;
        if (candidates_.size() < k) {
            candidates_.push_back(candidate{v, static_cast<std::int32_t>(i)});
            std::push_heap(candidates_.begin(), candidates_.end(), cmp);
        } else if (v > candidates_.front().value) {
            std::pop_heap(candidates_.begin(), candidates_.end(), cmp);
            candidates_.back() = candidate{v, static_cast<std::int32_t>(i)};
            std::push_heap(candidates_.begin(), candidates_.end(), cmp);
        }
    }
}

double sampler::softmax_and_min_p() {
    float max_value = neg_inf;
    for (const auto& c : candidates_)
        max_value = std::max(max_value, c.value);
    // Dividing the difference (not each logit) by the temperature cannot overflow to inf - inf.
    const float t = params_.temperature;
    double total = 0.0;
    for (auto& c : candidates_) {
        c.value = std::exp((c.value - max_value) / t);
        total += c.value;
    }
    // The best token has probability exactly 1 here, so min-p compares against min_p itself. Applying it
    // before top-p selects the same set (both keep a prefix of the sorted order) while shrinking the sort;
    // top-p still uses `total`, the normalizer over every candidate. Zero-probability tokens go as well.
    const float threshold = params_.min_p;
    std::erase_if(candidates_, [threshold](const candidate& c) { return c.value <= 0.0f || c.value < threshold; });
    return total;
}

void sampler::keep_top_p(double total) {
    if (params_.top_p >= 1.0f)
        return;
    const double target = static_cast<double>(params_.top_p) * total;
    const auto cmp = [](const candidate& a, const candidate& b) { return better(a, b); };
    const auto begin = candidates_.begin();
    const std::size_t n = candidates_.size();
    double cumulative = 0.0;
    // Sort only as far as needed: each round moves the next-best chunk forward and sorts it.
    for (std::size_t sorted = 0, chunk = 64; sorted < n; chunk *= 4) {
        const std::size_t end = std::min(n, sorted + chunk);
        const auto first = begin + static_cast<std::ptrdiff_t>(sorted);
        const auto last = begin + static_cast<std::ptrdiff_t>(end);
        if (end < n)
            std::nth_element(first, last, candidates_.end(), cmp);
        std::sort(first, last, cmp);
        for (std::size_t i = sorted; i < end; ++i) {
            cumulative += candidates_[i].value;
            if (cumulative >= target) {
                candidates_.resize(i + 1);
                return;
            }
        }
        sorted = end;
    }
}

std::size_t sampler::draw(float& probability) {
    // Walk the survivors in id order so the draw does not depend on how the standard library partitions.
    const auto by_id = [](const candidate& a, const candidate& b) { return a.id < b.id; };
    if (!std::is_sorted(candidates_.begin(), candidates_.end(), by_id))
        std::sort(candidates_.begin(), candidates_.end(), by_id);
    double total = 0.0;
    for (const auto& c : candidates_)
        total += c.value;
    const double u = rng_.uniform() * total;
    double cumulative = 0.0;
    std::size_t chosen = candidates_.size() - 1;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
        cumulative += candidates_[i].value;
        if (cumulative > u) {
            chosen = i;
            break;
        }
    }
    probability = static_cast<float>(candidates_[chosen].value / total);
    return chosen;
}

} // namespace sluice::runtime
