// The draft-length controller against step costs of known shape: it drafts long with a cheap draft that is nearly
// always accepted, also when a third of the steps take five times their time (a loaded machine); it stops drafting
// for a draft as costly as the model or one whose tokens are rejected, and probes again while off.
#include "runtime/engine/speculative.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace sluice {
namespace {

/// One session's steps: plain steps cost `plain` ms, a verification of k drafts plain * (1 + verify_share * k) and
/// drafting k tokens draft_share * plain * k; step i (0-based) takes `slow` times as long when slow_every divides
/// i + 1. Every draft is accepted with `accept_all`, every one rejected otherwise. Returns the draft lengths chosen.
struct session_sim {
    double plain = 1.0;
    double verify_share = 0.5;
    double draft_share = 0.05;
    bool accept_all = true;
    std::uint32_t slow_every = 0;
    double slow = 5.0;
    bool shadow = false; ///< free drafts (prompt lookup): each plain step checks one (accepted as accept_all says)

    std::vector<std::uint32_t> run(speculation::draft_controller& c, std::size_t steps, std::uint32_t limit = 8) const {
        std::vector<std::uint32_t> chosen;
        for (std::size_t i = 0; i < steps; ++i) {
            const double factor = slow_every != 0 && (i + 1) % slow_every == 0 ? slow : 1.0;
            const auto k = c.next_k(limit);
            chosen.push_back(k);
            if (k == 0) {
                c.record_plain(plain * factor);
                if (shadow) {
                    c.record_shadow(accept_all);
                }
                continue;
            }
            const double verify = plain * (1.0 + verify_share * k) * factor;
            const double draft = draft_share * plain * k * factor;
            c.record_verify(k, accept_all ? k : 0, !accept_all, verify, draft);
        }
        return chosen;
    }
};

/// The most common length among the last `n` choices.
std::uint32_t settled_length(const std::vector<std::uint32_t>& chosen, std::size_t n) {
    std::map<std::uint32_t, int> count;
    for (std::size_t i = chosen.size() - n; i < chosen.size(); ++i) {
        ++count[chosen[i]];
    }
    return std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
}

TEST(draft_controller, a_cheap_draft_that_is_always_accepted_drafts_long) {
    // Tokens per millisecond grow with the length up to the limit of 8 (by less than 2% from 6 on).
    speculation::draft_controller c;
    const auto chosen = session_sim{}.run(c, 200);
    EXPECT_GE(settled_length(chosen, 100), 6u);
    EXPECT_GT(c.acceptance(), 0.95);
    EXPECT_NEAR(c.plain_ms(), 1.0, 1e-9);
    EXPECT_NEAR(c.extra_ms(), 0.5, 1e-9);
    EXPECT_NEAR(c.draft_ms(), 0.05, 1e-9);
}

TEST(draft_controller, steps_that_take_five_times_as_long_now_and_then_do_not_shorten_the_drafts) {
    // Every third step, plain or verification, is slow: averages would see costs 2.3 times too high (and plain
    // steps, rare while drafting, sometimes cheap against slow verifications); the medians do not.
    speculation::draft_controller c;
    session_sim sim;
    sim.slow_every = 3;
    const auto chosen = sim.run(c, 400);
    EXPECT_GE(settled_length(chosen, 200), 6u);
    EXPECT_NEAR(c.plain_ms(), 1.0, 1e-9);
    EXPECT_NEAR(c.extra_ms(), 0.5, 1e-9);
}

TEST(draft_controller, a_draft_as_costly_as_the_model_stops_drafting) {
    // Every draft accepted, but each costs a whole plain step to draft: k drafts give k + 1 tokens for
    // 1 + 1.5 k steps' time, which never beats one token per step.
    speculation::draft_controller c;
    session_sim sim;
    sim.draft_share = 1.0;
    const auto chosen = sim.run(c, 300);
    std::size_t drafting = 0;
    for (std::size_t i = 100; i < chosen.size(); ++i) {
        drafting += chosen[i] != 0 ? 1 : 0;
    }
    EXPECT_LE(drafting, 4u) << "probes only";
}

TEST(draft_controller, a_draft_whose_tokens_are_rejected_stops_drafting_and_probes_less_and_less_often) {
    speculation::draft_controller c;
    session_sim sim;
    sim.accept_all = false;
    sim.draft_share = 0.0; // free drafts (prompt lookup): only acceptance can turn drafting off
    const auto chosen = sim.run(c, 2000);
    std::vector<std::size_t> probes;
    for (std::size_t i = 20; i < chosen.size(); ++i) {
        if (chosen[i] != 0) {
            probes.push_back(i);
        }
    }
    ASSERT_GE(probes.size(), 3u);
    EXPECT_LE(probes.size(), 8u);
    EXPECT_GT(probes[2] - probes[1], probes[1] - probes[0]); // each failed probe doubles the wait
}

TEST(draft_controller, finding_out_that_a_read_bound_draft_does_not_pay_drafts_one_token_at_a_time) {
    // Streamed experts on a workload where each verified position reads its own experts: a verification of k drafts
    // costs k + 1 plain steps, and every draft is rejected. The first measurement (3 steps) and each probe draft one
    // token, so 300 steps spend at most 3 + 4 drafted positions (probes after 32, 64 and 128 plain steps).
    speculation::draft_controller c;
    session_sim sim;
    sim.verify_share = 1.0;
    sim.draft_share = 0.0;
    sim.accept_all = false;
    const auto chosen = sim.run(c, 300);
    std::uint32_t positions = 0;
    for (const auto k : chosen) {
        EXPECT_LE(k, 1u);
        positions += k;
    }
    EXPECT_GE(positions, 3u);
    EXPECT_LE(positions, 7u);
}

TEST(draft_controller, free_drafts_that_plain_steps_find_rejected_never_cost_a_verification) {
    // Prompt lookup's drafts checked on plain steps: every one would be rejected, so no drafting step is tried at
    // all (no first measurement, no probe) where without the checks the controller pays 3 + probes.
    speculation::draft_controller c;
    c.expect_shadow();
    session_sim sim;
    sim.accept_all = false;
    sim.draft_share = 0.0;
    sim.shadow = true;
    const auto chosen = sim.run(c, 2000);
    EXPECT_EQ(std::count(chosen.begin(), chosen.end(), 0u), static_cast<std::ptrdiff_t>(chosen.size()));
    EXPECT_LT(c.acceptance(), 0.01);
}

TEST(draft_controller, free_drafts_never_checked_on_a_plain_step_start_no_drafting) {
    speculation::draft_controller c;
    c.expect_shadow(); // but no plain step ever had a draft to check
    const auto chosen = session_sim{}.run(c, 100);
    EXPECT_EQ(std::count(chosen.begin(), chosen.end(), 0u), static_cast<std::ptrdiff_t>(chosen.size()));
}

TEST(draft_controller, free_drafts_that_plain_steps_find_accepted_start_drafting_at_once) {
    speculation::draft_controller c;
    c.expect_shadow();
    session_sim sim;
    sim.draft_share = 0.0;
    sim.shadow = true;
    const auto chosen = sim.run(c, 200);
    ASSERT_GE(chosen.size(), 3u);
    EXPECT_EQ(chosen[0], 0u); // the first plain step measures a plain step's cost (and checks one free draft)
    EXPECT_EQ(chosen[1], 0u); // the first measured one (the first is left out as cold)
    EXPECT_EQ(chosen[2], 3u); // then the first measurement drafts, 3 tokens after two free drafts found right
    EXPECT_GE(settled_length(chosen, 100), 6u);
}

TEST(draft_controller, slow_cold_plain_steps_do_not_make_verifications_of_a_warm_cache_look_free) {
    // Streamed: the first plain steps after a prompt wait for their experts (300 ms, 220 of them waiting), later
    // passes find them cached (a plain step would take 80 ms, 8 waiting). A verified position costs 40 ms of
    // compute and 4 ms of waits, and at most 45% of drafts are accepted: one drafted token gives 1.45 tokens for
    // 80 + 40 + 4 = 124 ms against 1.45 plain steps' 116 ms, so drafting does not pay. Set against the cold plain
    // steps' 300 ms the verifications would look free; with compute and waits apart the controller stops.
    speculation::draft_controller c;
    for (int i = 0; i < 8; ++i) {
        c.record_plain(300.0, 220.0);
    }
    std::uint32_t drafting = 0;
    for (int step = 0; step < 60; ++step) {
        const auto k = c.next_k(4);
        if (k == 0) {
            c.record_plain(80.0, 8.0);
            continue;
        }
        drafting += step >= 20 ? 1 : 0;
        // 9 steps in 20 accept the first draft and reject the second (when there is one), the others reject the
        // first: at most 45% of drafts accepted.
        const bool first = step % 20 < 9;
        c.record_verify(k, first ? 1 : 0, !first || k > 1, 72.0 + 40.0 * k + 4.0 * (k + 1), 0.0, 4.0 * (k + 1));
    }
    EXPECT_NEAR(c.plain_ms(), 72.0, 1e-9);
    EXPECT_NEAR(c.extra_ms(), 40.0, 1e-9);
    EXPECT_LE(drafting, 2u) << "probes only, once the costs are measured";
}

/// Streamed steps whose costs follow the expert cache's state: a pass computes 10 ms plus 3 ms per drafted position
/// and waits 1 ms per expert it reads; every draft is accepted. Drafts cost nothing to make, so once the controller
/// chose a length the session drafts `limit` and fit() picks from their predicted reads (`reads(i)`: position i's,
/// 0 the step's last token). Returns the lengths verified (0: a plain step).
template <class Reads>
std::vector<std::uint32_t> run_costed(speculation::draft_controller& c, std::size_t steps, Reads reads,
                                      std::uint32_t limit = 8) {
    std::vector<std::uint32_t> chosen;
    for (std::size_t step = 0; step < steps; ++step) {
        const auto k = c.next_k(limit);
        std::uint32_t fitted = 0;
        if (k != 0) {
            std::vector<double> misses;
            for (std::uint32_t i = 0; i <= (c.chose() ? limit : k); ++i) {
                misses.push_back(reads(i));
            }
            fitted = c.fit(misses);
        }
        chosen.push_back(fitted);
        if (fitted == 0) {
            c.record_plain(10.0 + reads(0), reads(0));
            continue;
        }
        double predicted = 0.0;
        for (std::uint32_t i = 0; i <= fitted; ++i) {
            predicted += reads(i);
        }
        c.record_verify(fitted, fitted, false, 10.0 + 3.0 * fitted + predicted, 0.0, predicted, predicted);
    }
    return chosen;
}

TEST(draft_controller, drafts_end_where_their_experts_would_have_to_be_read) {
    // The first three drafted tokens' experts are cached (a passage repeated), the next ones need 20 reads each (the
    // text goes on past the repeat). The measured wait per position alone (2 ms: 8 reads over 4 positions) would
    // draft all 8 and read 100 experts; fitted to the drafts' own reads, 3 drafts give 4 tokens for 27 ms where a
    // fourth would give 5 for 50.
    speculation::draft_controller c;
    const auto reads = [](std::uint32_t i) { return i == 0 ? 8.0 : i <= 3 ? 0.0 : 20.0; };
    const auto chosen = run_costed(c, 100, reads);
    EXPECT_EQ(settled_length(chosen, 50), 3u);
    EXPECT_NEAR(c.wait_per_read(), 1.0, 1e-9);
}

TEST(draft_controller, drafts_whose_experts_are_all_cached_run_to_the_limit_and_costly_ones_are_not_verified) {
    speculation::draft_controller cached;
    const auto all = run_costed(cached, 100, [](std::uint32_t i) { return i == 0 ? 8.0 : 0.0; });
    EXPECT_EQ(settled_length(all, 50), 8u);
    // Every drafted token reads 30 experts: one draft gives 2 tokens for 51 ms against a plain step's 18 each. After
    // the first measurement (three one-token drafts, 8 + 30 reads each) no draft is verified.
    speculation::draft_controller costly;
    const auto none = run_costed(costly, 100, [](std::uint32_t i) { return i == 0 ? 8.0 : 30.0; });
    EXPECT_EQ(std::count_if(none.begin() + 10, none.end(), [](std::uint32_t k) { return k != 0; }), 0);
}

TEST(draft_controller, fit_keeps_the_chosen_length_until_waits_per_read_are_measured) {
    speculation::draft_controller c;
    const std::vector<double> misses{8.0, 0.0, 0.0, 0.0, 0.0};
    EXPECT_EQ(c.fit(misses), 4u) << "a measuring step keeps its drafts";
    session_sim{}.run(c, 50); // resident costs: no verification predicted reads
    EXPECT_LT(c.wait_per_read(), 0.0);
    auto k = c.next_k(8);
    if (!c.chose()) {
        c.record_plain(1.0); // a refresh of the plain cost was due
        k = c.next_k(8);
    }
    ASSERT_TRUE(c.chose());
    const std::vector<double> longer(10, 0.0);
    EXPECT_EQ(c.fit(longer), k);
    EXPECT_EQ(c.fit(misses), std::min(k, 4u));
}

TEST(draft_controller, recent_median_ignores_a_minority_of_outliers_and_follows_a_lasting_change) {
    speculation::recent_median m;
    EXPECT_EQ(m.median(), 0.0);
    for (int i = 0; i < 9; ++i) {
        m.add(i % 3 == 2 ? 10.0 : 1.0);
    }
    EXPECT_EQ(m.median(), 1.0);
    for (int i = 0; i < 5; ++i) {
        m.add(2.0);
    }
    EXPECT_EQ(m.median(), 2.0);
    speculation::recent_median two;
    two.add(1.0);
    two.add(3.0);
    EXPECT_EQ(two.median(), 1.0); // the lower middle value: slow outliers are the common kind
}

} // namespace
} // namespace sluice
