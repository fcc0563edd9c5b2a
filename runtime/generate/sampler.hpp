// Token sampler: repetition penalties, greedy, top-k, temperature, top-p, min-p and a seeded draw over logits.
#pragma once

#include "sluice/error.hpp"
#include "sluice/sampling.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::runtime {

using sluice::sampling_params;
using sluice::token_logprob;


/// Checks every field of `p`. Errors (std::errc::invalid_argument) name the field and the bad value,
/// e.g. "top_p must be in (0, 1], got 1.5", so the server can return them as a 400 as they are.
/// A negative temperature is valid (greedy); NaN or infinite values are rejected everywhere.
[[nodiscard]] result<void> validate(const sampling_params& p);

/// What `sampler::sample_detailed` reports besides the token.
struct sampled_token {
    std::int32_t token = 0;
    /// Probability of `token` in the distribution it was drawn from: after penalties, temperature and every
    /// filter, renormalized over the survivors. 1 for greedy.
    float probability = 0.0f;
    /// log softmax of the raw logits at `token`: the model's own distribution (no penalties, temperature 1,
    /// no filters), which is what the OpenAI `logprobs` field reports. -inf when the token has no mass.
    float logprob = 0.0f;
};

/// xoshiro256** seeded through splitmix64: a fixed generator, so draws are the same on every platform.
class xoshiro256ss {
public:
    explicit xoshiro256ss(std::uint64_t seed);
    std::uint64_t next();
    /// A uniform double in [0, 1) built from the top 53 bits.
    double uniform();

private:
    std::array<std::uint64_t, 4> s_{};
};

/// Chooses tokens for one generation stream. Not thread-safe: one per sequence.
/// Order inside `sample`: penalties on the raw logits (from the accepted history), then greedy when
/// temperature <= 0; otherwise top-k, temperature, softmax, top-p (smallest set whose cumulative probability
/// reaches top_p, at least one token), min-p, renormalization and a draw from the survivors only.
/// NaN logits count as -inf; +inf logits share all the probability equally. When every logit is -inf after
/// penalties the result is the argmax of the raw logits (the lowest id when all of them are -inf or NaN).
/// Ties between equal logits always go to the lower id, and the draw walks the survivors in id order, so the
/// result does not depend on the standard library. Cost at 150k tokens: top-k scans once with a k-sized heap
/// (about greedy's cost); without top-k every token gets an exp() and top-p sorts only as far as it needs.
/// Scratch buffers live in the object: steady-state calls do not allocate (except sample_detailed's `top`).
class sampler {
public:
    /// `params` must pass validate() (asserted). `n_vocab` is the length of every logits row.
    sampler(const sampling_params& params, std::size_t n_vocab);

    /// Returns the chosen token id. `logits.size()` must equal n_vocab (asserted). Does not accept the token:
    /// call accept() with whatever token is actually appended.
    std::int32_t sample(std::span<const float> logits);

    /// Like sample(), also reporting the token's probabilities and, when `n_top` > 0, the `n_top` most likely
    /// tokens of the raw distribution in `top` (logprob descending, ties by lowest id; `top` is overwritten).
    /// Costs two more passes over the logits than sample().
    sampled_token sample_detailed(std::span<const float> logits, std::size_t n_top, std::vector<token_logprob>& top);

    /// Like sample_detailed(), choosing from `masked` (the logits with disallowed tokens at -inf, as grammar-
    /// constrained sampling passes them) while `logprob` and `top` report the unmasked `raw` distribution.
    sampled_token sample_detailed(std::span<const float> masked, std::span<const float> raw, std::size_t n_top,
                                  std::vector<token_logprob>& top);

    /// Speculative decoding's rule for a drafted token proposed with certainty (a deterministic draft: prompt
    /// lookup, a greedy draft model). `accepted` tells whether `draft` is the result: greedy accepts it when it
    /// is the argmax; sampling accepts it with its probability p(draft) in the distribution sample() draws
    /// from, and otherwise draws from that distribution with `draft` removed (renormalized), so the token
    /// returned has exactly that distribution. `logprob` and `top` as sample_detailed(). Does not accept().
    sampled_token sample_against(std::span<const float> logits, std::int32_t draft, bool& accepted, std::size_t n_top,
                                 std::vector<token_logprob>& top);

    /// Appends a token to the history the penalties look at (prompt tokens may be accepted too).
    /// Ids outside [0, n_vocab) are ignored.
    void accept(std::int32_t token);

    /// Forgets the history and restarts the random generator from the seed.
    void reset();

    const sampling_params& params() const { return params_; }

private:
    struct candidate {
        float value; ///< logit, later the unnormalized probability
        std::int32_t id;
    };

    bool penalties_on() const;
    std::int32_t choose(std::span<const float> logits, float& probability);
    const float* penalized(std::span<const float> logits);
    double filter_and_softmax(const float* l, std::size_t n);
    double softmax_all(const float* l, std::size_t n);
    void gather_top_k(const float* l, std::size_t n, std::size_t k);
    double softmax_and_min_p();
    void keep_top_p(double total);
    std::size_t draw(float& probability);
    void forget(std::int32_t token);

    sampling_params params_;
    std::size_t n_vocab_;
    xoshiro256ss rng_;
    std::vector<float> scratch_;         ///< penalized logits
    std::vector<candidate> candidates_;  ///< survivors of the filters so far
    std::vector<std::int32_t> counts_;   ///< occurrences of each id in the penalty window
    std::vector<std::int32_t> active_;   ///< ids with counts_ > 0
    std::vector<std::int32_t> position_; ///< index of an id in active_, -1 when absent
    std::vector<std::int32_t> window_;   ///< ring of the last repeat_last_n accepted ids (unused when -1)
    std::size_t window_head_ = 0;        ///< oldest entry of window_ once it is full
};

} // namespace sluice::runtime
