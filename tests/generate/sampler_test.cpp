// Checks the sampler: greedy, seeding, each filter's support and frequencies, penalties, robustness, validation.
#include "runtime/generate/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace {

namespace rt = sluice::runtime;
constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

/// Parameters with every filter and penalty off, at temperature 1.
rt::sampling_params plain(std::uint64_t seed = 7) {
    rt::sampling_params p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> l;
    for (const double p : probs)
        l.push_back(p > 0 ? static_cast<float>(std::log(p)) : -inf);
    return l;
}

std::vector<double> softmax(const std::vector<float>& l, double t = 1.0) {
    const double mx = *std::max_element(l.begin(), l.end());
    std::vector<double> p;
    for (const float v : l)
        p.push_back(std::exp((v - mx) / t));
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    for (auto& v : p)
        v /= sum;
    return p;
}

std::vector<int> histogram(rt::sampler& s, const std::vector<float>& l, int draws) {
    std::vector<int> counts(l.size(), 0);
    for (int i = 0; i < draws; ++i) {
        const auto t = s.sample(l);
        EXPECT_GE(t, 0);
        EXPECT_LT(static_cast<std::size_t>(t), l.size());
        ++counts[static_cast<std::size_t>(t)];
    }
    return counts;
}

/// Each count within 5 binomial standard deviations of draws * expected (a failure is ~1e-6 likely by chance).
void expect_frequencies(const std::vector<int>& counts, const std::vector<double>& expected, int draws) {
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const double mean = draws * expected[i];
        const double sd = std::sqrt(draws * expected[i] * (1 - expected[i]));
        if (expected[i] == 0) {
            EXPECT_EQ(counts[i], 0) << "token " << i << " has no probability but was drawn";
        } else {
            EXPECT_NEAR(counts[i], mean, 5 * sd + 1) << "token " << i;
        }
    }
}

double chi_square(const std::vector<int>& counts, const std::vector<double>& expected, int draws) {
    double chi = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const double e = draws * expected[i];
        chi += (counts[i] - e) * (counts[i] - e) / e;
    }
    return chi;
}

std::vector<float> random_logits(std::mt19937& gen, std::size_t n, float scale) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> l(n);
    for (auto& v : l)
        v = d(gen);
    return l;
}

TEST(sampler, greedy_picks_argmax_and_lowest_id_on_ties) {
    for (const float t : {0.0f, -1.0f}) {
        auto p = plain();
        p.temperature = t;
        rt::sampler s(p, 5);
        EXPECT_EQ(s.sample(std::vector<float>{1, 3, 2, 3, -inf}), 1);
        EXPECT_EQ(s.sample(std::vector<float>{1, 3, 2, 4, -inf}), 3);
        EXPECT_EQ(s.sample(std::vector<float>{-5, -5, -5, -5, -5}), 0);
        std::vector<rt::token_logprob> top;
        EXPECT_EQ(s.sample_detailed(std::vector<float>{0, 0, 9, 9, 1}, 0, top).probability, 1.0f);
    }
}

std::vector<std::int32_t> run_sequence(rt::sampler& s, int steps) {
    std::mt19937 gen(1234);
    std::vector<std::int32_t> out;
    for (int i = 0; i < steps; ++i) {
        const auto l = random_logits(gen, 100, 1.0f);
        out.push_back(s.sample(l));
        s.accept(out.back());
    }
    return out;
}

TEST(sampler, same_seed_gives_same_sequence) {
    auto p = rt::sampling_params{};
    p.seed = 42;
    p.repeat_penalty = 1.2f;
    rt::sampler a(p, 100);
    rt::sampler b(p, 100);
    const auto first = run_sequence(a, 300);
    EXPECT_EQ(first, run_sequence(b, 300));
    a.reset();
    EXPECT_EQ(first, run_sequence(a, 300)) << "reset must restart the generator and forget the history";
    EXPECT_GT(std::set<std::int32_t>(first.begin(), first.end()).size(), 10u) << "the sequence should vary";
}

TEST(sampler, different_seed_differs) {
    auto p = rt::sampling_params{};
    p.seed = 1;
    rt::sampler a(p, 100);
    p.seed = 2;
    rt::sampler b(p, 100);
    EXPECT_NE(run_sequence(a, 300), run_sequence(b, 300));
}

TEST(sampler, top_k_1_equals_greedy) {
    auto p = plain();
    p.top_k = 1;
    p.temperature = 3.0f;
    rt::sampler top1(p, 500);
    p.temperature = 0.0f;
    rt::sampler greedy(p, 500);
    std::mt19937 gen(5);
    for (int i = 0; i < 200; ++i) {
        auto l = random_logits(gen, 500, 0.5f);
        l[static_cast<std::size_t>(i)] = l[static_cast<std::size_t>(i) + 100] = 10.0f; // a tie: lowest id wins
        EXPECT_EQ(top1.sample(l), greedy.sample(l));
        EXPECT_EQ(greedy.sample(l), i);
    }
}

TEST(sampler, top_k_only_draws_from_the_k_best) {
    std::mt19937 gen(11);
    auto l = random_logits(gen, 1000, 1.0f);
    std::vector<std::size_t> order(l.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return l[a] > l[b]; });
    auto p = plain();
    p.top_k = 10;
    p.temperature = 2.0f;
    rt::sampler s(p, l.size());
    const int draws = 20000;
    const auto counts = histogram(s, l, draws);
    // Expected: softmax(l / T) restricted to the 10 best, renormalized.
    std::vector<double> expected(l.size(), 0.0);
    double sum = 0;
    for (std::size_t r = 0; r < 10; ++r)
        sum += expected[order[r]] = std::exp((l[order[r]] - l[order[0]]) / 2.0);
    for (auto& e : expected)
        e /= sum;
    expect_frequencies(counts, expected, draws);
}

TEST(sampler, top_p_excludes_the_tail) {
    // Ids deliberately not in probability order. Sorted: 0.4, 0.3, 0.2 (cum 0.9 >= 0.85), then the tail.
    const std::vector<double> probs{0.06, 0.3, 0.04, 0.4, 0.2};
    auto p = plain();
    p.top_p = 0.85f;
    rt::sampler s(p, probs.size());
    const int draws = 20000;
    const auto counts = histogram(s, logits_of(probs), draws);
    expect_frequencies(counts, {0, 0.3 / 0.9, 0, 0.4 / 0.9, 0.2 / 0.9}, draws);
}

TEST(sampler, top_p_keeps_the_smallest_set_reaching_top_p) {
    // Equal logits give probabilities of exactly 1/4: top_p = 0.5 is reached by two tokens (the lowest ids
    // among ties), 0.75 by three.
    for (const auto& [top_p, kept] : {std::pair{0.5f, 2}, std::pair{0.75f, 3}}) {
        auto p = plain();
        p.top_p = top_p;
        rt::sampler s(p, 4);
        const int draws = 8000;
        const auto counts = histogram(s, {1.0f, 1.0f, 1.0f, 1.0f}, draws);
        std::vector<double> expected(4, 0.0);
        std::fill_n(expected.begin(), kept, 1.0 / kept);
        expect_frequencies(counts, expected, draws);
    }
}

TEST(sampler, top_p_always_keeps_the_best_token) {
    auto p = plain();
    p.top_p = 0.01f;
    rt::sampler s(p, 4);
    const auto counts = histogram(s, logits_of({0.2, 0.3, 0.25, 0.25}), 2000);
    EXPECT_EQ(counts, (std::vector<int>{0, 2000, 0, 0}));
}

TEST(sampler, min_p_excludes_tokens_below_threshold) {
    // p_max = 0.5, min_p = 0.1: threshold 0.05, so 0.049 and 0.03 go.
    const std::vector<double> probs{0.1, 0.049, 0.5, 0.03, 0.2, 0.121};
    auto p = plain();
    p.min_p = 0.1f;
    rt::sampler s(p, probs.size());
    const int draws = 20000;
    const auto counts = histogram(s, logits_of(probs), draws);
    const double kept = 0.1 + 0.5 + 0.2 + 0.121;
    expect_frequencies(counts, {0.1 / kept, 0, 0.5 / kept, 0, 0.2 / kept, 0.121 / kept}, draws);
}

TEST(sampler, top_p_and_min_p_combine_in_order) {
    // top_p = 0.9 keeps {0.35, 0.25, 0.2, 0.1} (cum 0.9); min_p = 0.5 then keeps p >= 0.175: {0.35, 0.25, 0.2}.
    const std::vector<double> probs{0.1, 0.25, 0.05, 0.35, 0.05, 0.2};
    auto p = plain();
    p.top_p = 0.9f;
    p.min_p = 0.5f;
    rt::sampler s(p, probs.size());
    const int draws = 20000;
    const auto counts = histogram(s, logits_of(probs), draws);
    expect_frequencies(counts, {0, 0.25 / 0.8, 0, 0.35 / 0.8, 0, 0.2 / 0.8}, draws);
}

TEST(sampler, temperature_sharpens_and_flattens) {
    const std::vector<float> l{0.0f, 1.0f, 2.0f, 0.5f, 1.5f};
    const auto base = softmax(l);
    for (const double t : {0.5, 1.0, 2.0}) {
        auto p = plain(static_cast<std::uint64_t>(t * 10));
        p.temperature = static_cast<float>(t);
        rt::sampler s(p, l.size());
        const int draws = 40000;
        const auto counts = histogram(s, l, draws);
        const auto expected = softmax(l, t);
        // 4 degrees of freedom: P(chi2 > 30) is about 5e-6.
        EXPECT_LT(chi_square(counts, expected, draws), 30.0) << "T=" << t;
        const double top_share = counts[2] / double(draws);
        if (t < 1) {
            EXPECT_GT(top_share, base[2] + 0.05) << "a low temperature must sharpen";
        }
        if (t > 1) {
            EXPECT_LT(top_share, base[2] - 0.05) << "a high temperature must flatten";
        }
    }
}

/// Draws until every token has been seen, checking each reported probability against `expected`.
void expect_draw_probabilities(rt::sampler& s, const std::vector<float>& l, const std::vector<double>& expected) {
    std::vector<rt::token_logprob> top;
    std::set<std::int32_t> seen;
    for (int i = 0; i < 2000 && seen.size() < l.size(); ++i) {
        const auto r = s.sample_detailed(l, 0, top);
        seen.insert(r.token);
        EXPECT_NEAR(r.probability, expected[static_cast<std::size_t>(r.token)], 1e-5) << "token " << r.token;
    }
    EXPECT_EQ(seen.size(), l.size());
}

TEST(sampler, repeat_penalty_matches_formula) {
    auto p = plain();
    p.repeat_penalty = 1.5f;
    rt::sampler s(p, 4);
    s.accept(0);
    s.accept(1);
    s.accept(0); // counted once: the repeat penalty does not grow with the count
    expect_draw_probabilities(s, {2.0f, -1.0f, 0.5f, 0.0f}, softmax({2.0f / 1.5f, -1.0f * 1.5f, 0.5f, 0.0f}));

    // Greedy tells division (positive logit) from multiplication (negative logit) apart.
    p.temperature = 0.0f;
    p.repeat_penalty = 1.1f;
    rt::sampler g(p, 2);
    g.accept(0);
    EXPECT_EQ(g.sample(std::vector<float>{2.0f, 1.9f}), 1);    // 2 / 1.1 = 1.82
    EXPECT_EQ(g.sample(std::vector<float>{-1.0f, -1.05f}), 1); // -1 * 1.1 = -1.1
    EXPECT_EQ(g.sample(std::vector<float>{-1.0f, -1.2f}), 0);
}

TEST(sampler, presence_and_frequency_penalties_match_openai_formula) {
    auto p = plain();
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    rt::sampler s(p, 4);
    for (const std::int32_t t : {0, 0, 1, 0})
        s.accept(t);
    const std::vector<float> l{1.0f, 1.0f, 1.0f, 0.2f};
    expect_draw_probabilities(s, l, softmax({1.0f - 3 * 0.25f - 0.5f, 1.0f - 0.25f - 0.5f, 1.0f, 0.2f}));

    // Negative values encourage repetition.
    p.presence_penalty = -0.5f;
    p.frequency_penalty = 0.0f;
    p.temperature = 0.0f;
    rt::sampler g(p, 4);
    g.accept(3);
    EXPECT_EQ(g.sample(std::vector<float>{1.0f, 1.0f, 1.0f, 0.6f}), 3); // 0.6 + 0.5 = 1.1 beats 1
}

TEST(sampler, repeat_last_n_window_forgets_old_tokens) {
    auto p = plain();
    p.temperature = 0.0f;
    p.repeat_penalty = 100.0f;
    p.repeat_last_n = 3;
    rt::sampler s(p, 5);
    const std::vector<float> l{1.0f, 0.9f, 0.8f, 0.7f, 0.6f};
    s.accept(0);
    EXPECT_EQ(s.sample(l), 1);
    s.accept(1);
    s.accept(2);
    EXPECT_EQ(s.sample(l), 3); // window {0, 1, 2}
    s.accept(3);
    EXPECT_EQ(s.sample(l), 0); // window {1, 2, 3}: 0 is forgotten

    // Counts follow the window too: after 0 0 1 2 with a window of 3, token 0 counts once.
    auto f = plain();
    f.frequency_penalty = 1.0f;
    f.repeat_last_n = 3;
    rt::sampler c(f, 4);
    for (const std::int32_t t : {0, 0, 1, 2})
        c.accept(t);
    expect_draw_probabilities(c, {1.0f, 1.0f, 1.0f, 1.0f}, softmax({0.0f, 0.0f, 0.0f, 1.0f}));

    // -1 remembers everything.
    p.repeat_last_n = -1;
    rt::sampler all(p, 5);
    for (const std::int32_t t : {0, 4, 4, 4, 4, 4, 4, 4})
        all.accept(t);
    EXPECT_EQ(all.sample(l), 1);
}

TEST(sampler, nan_and_inf_logits_are_safe) {
    for (const float t : {0.0f, 1.0f}) {
        auto p = rt::sampling_params{};
        p.temperature = t;
        rt::sampler s(p, 4);
        for (int i = 0; i < 200; ++i) {
            EXPECT_EQ(s.sample(std::vector<float>{nan, nan, nan, nan}), 0);
            EXPECT_EQ(s.sample(std::vector<float>{-inf, -inf, -inf, -inf}), 0);
            EXPECT_EQ(s.sample(std::vector<float>{nan, -inf, 1.0f, nan}), 2);
            EXPECT_EQ(s.sample(std::vector<float>{1e30f, nan, -1e30f, -inf}), 0);
        }
    }
    // +inf logits share all the mass; finite ones get none.
    rt::sampler s(plain(), 4);
    const auto counts = histogram(s, {-inf, inf, 3.0f, inf}, 4000);
    EXPECT_EQ(counts[0] + counts[2], 0);
    EXPECT_NEAR(counts[1], 2000, 200);
    // A probability that underflows to 0 is never drawn.
    const auto tiny = histogram(s, {0.0f, -200.0f, 0.0f, -inf}, 20000);
    EXPECT_EQ(tiny[1] + tiny[3], 0);
    // A penalty that pushes the only finite logit to -inf falls back to the raw argmax.
    auto p = plain();
    p.repeat_penalty = 2.0f;
    rt::sampler pen(p, 3);
    pen.accept(1);
    EXPECT_EQ(pen.sample(std::vector<float>{-inf, -3e38f, nan}), 1);
    std::vector<rt::token_logprob> top;
    const auto r = pen.sample_detailed(std::vector<float>{nan, 0.0f, -inf}, 2, top);
    EXPECT_EQ(r.token, 1);
    EXPECT_FLOAT_EQ(r.logprob, 0.0f);
}

TEST(sampler, logprobs_are_log_softmax_of_raw_logits) {
    const std::vector<float> l{1.0f, 2.0f, 3.0f, 0.0f, 3.0f, nan};
    auto p = plain();
    p.temperature = 0.5f;
    p.repeat_penalty = 1.3f;
    rt::sampler s(p, l.size());
    s.accept(2);
    const double lse = std::log(std::exp(1.0) + std::exp(2.0) + 2 * std::exp(3.0) + 1.0);
    std::vector<rt::token_logprob> top;
    for (int i = 0; i < 50; ++i) {
        const auto r = s.sample_detailed(l, 3, top);
        EXPECT_NEAR(r.logprob, l[static_cast<std::size_t>(r.token)] - lse, 1e-5);
        ASSERT_EQ(top.size(), 3u);
        EXPECT_EQ(top[0].token, 2);
        EXPECT_EQ(top[1].token, 4);
        EXPECT_EQ(top[2].token, 1);
        EXPECT_NEAR(top[0].logprob, 3.0 - lse, 1e-5);
        EXPECT_NEAR(top[2].logprob, 2.0 - lse, 1e-5);
    }
    s.sample_detailed(l, 100, top);
    EXPECT_EQ(top.size(), l.size());
    EXPECT_EQ(top.back().token, 5);
    EXPECT_EQ(top.back().logprob, -inf);
}

/// The survivors and their probabilities, computed the obvious way with a full sort.
std::map<std::int32_t, double> reference_distribution(std::vector<float> l, const rt::sampling_params& p,
                                                      const std::vector<std::int32_t>& history) {
    const std::size_t from =
        p.repeat_last_n < 0 ? 0 : history.size() - std::min(history.size(), std::size_t(p.repeat_last_n));
    std::map<std::int32_t, int> count;
    for (std::size_t i = from; i < history.size(); ++i)
        ++count[history[i]];
    for (const auto& [id, c] : count) {
        float& v = l[static_cast<std::size_t>(id)];
        v = v > 0 ? v / p.repeat_penalty : v * p.repeat_penalty;
        v -= float(c) * p.frequency_penalty + p.presence_penalty;
    }
    std::vector<std::int32_t> ids(l.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::erase_if(ids, [&](std::int32_t i) { return !(l[std::size_t(i)] > -inf); });
    std::stable_sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) { return l[a] > l[b]; });
    if (p.top_k > 0 && ids.size() > std::size_t(p.top_k))
        ids.resize(std::size_t(p.top_k));
    std::vector<float> prob;
    double total = 0;
    for (const auto id : ids)
        total += prob.emplace_back(std::exp((l[std::size_t(id)] - l[std::size_t(ids[0])]) / p.temperature));
    std::map<std::int32_t, double> out;
    double cum = 0, kept = 0;
    for (std::size_t r = 0; r < ids.size(); ++r) {
        if (prob[r] > 0 && prob[r] >= p.min_p)
            kept += out[ids[r]] = prob[r];
        if ((cum += prob[r]) >= p.top_p * total)
            break;
    }
    for (auto& [id, v] : out)
        v /= kept;
    return out;
}

TEST(sampler, draws_match_a_naive_reference_on_random_inputs) {
    std::mt19937 gen(99);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (int trial = 0; trial < 3000; ++trial) {
        rt::sampling_params p;
        p.temperature = 0.2f + 2 * unit(gen);
        p.top_k = int(gen() % 60) - 10;
        p.top_p = unit(gen) < 0.3f ? 1.0f : 0.05f + 0.95f * unit(gen);
        p.min_p = unit(gen) < 0.3f ? 0.0f : 0.3f * unit(gen);
        p.repeat_penalty = 0.5f + unit(gen);
        p.repeat_last_n = int(gen() % 20) - 1;
        p.presence_penalty = 2 * unit(gen) - 1;
        p.frequency_penalty = 2 * unit(gen) - 1;
        p.seed = gen();
        ASSERT_TRUE(rt::validate(p));
        const std::size_t n = 1 + gen() % 300;
        auto l = random_logits(gen, n, 3.0f);
        for (std::size_t i = 0; i < n / 10; ++i)
            l[gen() % n] = unit(gen) < 0.5f ? -inf : nan;
        std::vector<std::int32_t> history(gen() % 40);
        for (auto& t : history)
            t = std::int32_t(gen() % n);
        rt::sampler s(p, n);
        for (const auto t : history)
            s.accept(t);
        const auto ref = reference_distribution(l, p, p.repeat_last_n == 0 ? std::vector<std::int32_t>{} : history);
        std::vector<rt::token_logprob> top;
        const auto r = s.sample_detailed(l, 0, top);
        if (ref.empty())
            continue; // everything masked: covered by nan_and_inf_logits_are_safe
        ASSERT_TRUE(ref.count(r.token)) << "trial " << trial << ": token " << r.token << " was filtered out";
        EXPECT_NEAR(r.probability, ref.at(r.token), 1e-4) << "trial " << trial;
    }
}

struct bad_case {
    const char* field;
    void (*mutate)(rt::sampling_params&);
};

TEST(sampler, validation_rejects_bad_params_naming_the_field) {
    const bad_case cases[] = {
        {"temperature", [](rt::sampling_params& p) { p.temperature = nan; }},
        {"temperature", [](rt::sampling_params& p) { p.temperature = inf; }},
        {"top_p", [](rt::sampling_params& p) { p.top_p = 0.0f; }},
        {"top_p", [](rt::sampling_params& p) { p.top_p = 1.5f; }},
        {"top_p", [](rt::sampling_params& p) { p.top_p = nan; }},
        {"min_p", [](rt::sampling_params& p) { p.min_p = -0.1f; }},
        {"min_p", [](rt::sampling_params& p) { p.min_p = 1.01f; }},
        {"min_p", [](rt::sampling_params& p) { p.min_p = nan; }},
        {"repeat_penalty", [](rt::sampling_params& p) { p.repeat_penalty = 0.0f; }},
        {"repeat_penalty", [](rt::sampling_params& p) { p.repeat_penalty = -1.0f; }},
        {"repeat_penalty", [](rt::sampling_params& p) { p.repeat_penalty = nan; }},
        {"repeat_penalty", [](rt::sampling_params& p) { p.repeat_penalty = inf; }},
        {"repeat_last_n", [](rt::sampling_params& p) { p.repeat_last_n = -2; }},
        {"presence_penalty", [](rt::sampling_params& p) { p.presence_penalty = 2.5f; }},
        {"presence_penalty", [](rt::sampling_params& p) { p.presence_penalty = nan; }},
        {"frequency_penalty", [](rt::sampling_params& p) { p.frequency_penalty = -3.0f; }},
        {"frequency_penalty", [](rt::sampling_params& p) { p.frequency_penalty = nan; }},
    };
    for (const auto& c : cases) {
        rt::sampling_params p;
        c.mutate(p);
        const auto r = rt::validate(p);
        ASSERT_FALSE(r) << c.field;
        EXPECT_EQ(r.error().code, std::make_error_code(std::errc::invalid_argument));
        EXPECT_EQ(r.error().message.rfind(std::string(c.field) + " must be", 0), 0u) << r.error().message;
    }
    const auto r = [] {
        rt::sampling_params p;
        p.top_p = 1.5f;
        return rt::validate(p);
    }();
    EXPECT_EQ(r.error().message, "top_p must be in (0, 1], got 1.5");

    rt::sampling_params ok;
    EXPECT_TRUE(rt::validate(ok));
    ok.temperature = -1.0f;
    ok.top_p = 1.0f;
    ok.min_p = 0.0f;
    ok.top_k = -5;
    ok.repeat_last_n = -1;
    ok.presence_penalty = -2.0f;
    ok.frequency_penalty = 2.0f;
    EXPECT_TRUE(rt::validate(ok));
}

} // namespace
