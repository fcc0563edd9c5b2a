// Drafting with a model's own multi-token prediction block (model_options::mtp, speculative_mode::mtp) on the tiny
// random-weight glm4moe, whose file carries one NextN block: greedy output identical to plain decoding (resident
// and with streamed experts, chained drafts of several tokens), the drafted and accepted counters move (every
// draft accepted where the block and the model agree by construction), the block's experts, caches and buffers are
// planned inside the budget, and files or requests that cannot use it get a clear error while a file with the
// block still loads and runs without it. Draft-guided expert prefetch reads ahead with the same output.
#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/engine/mtp.hpp"
#include "runtime/engine/speculative.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/models/tensor_names.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>

namespace sluice {
namespace {

using kernels::quant_type;
using test::random_tokens;
using test::run_sync;

std::filesystem::path glm_path() {
    return test::tiny_model("glm4moe", quant_type::q8_0);
}

result<std::shared_ptr<model>> try_load(const std::filesystem::path& path, bool mtp, std::uint64_t budget = 0,
                                        bool draft_prefetch = true) {
    model_options o;
    o.draft_prefetch = draft_prefetch;
    o.n_ctx = 256;
    o.n_batch = 16;
    o.n_threads = 1; // a team of one: no barrier spinning on a loaded CI machine
    o.mtp = mtp;
    o.memory_budget = budget;
    o.disk_bandwidth = 1;
    return run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
}

std::shared_ptr<model> load(const std::filesystem::path& path, bool mtp, std::uint64_t budget = 0,
                            bool draft_prefetch = true) {
    auto m = try_load(path, mtp, budget, draft_prefetch);
    if (!m) {
        throw std::runtime_error(m.error().message);
    }
    return *m;
}

generate_request greedy(std::vector<std::int32_t> prompt, std::uint32_t n, std::optional<speculative_mode> mode,
                        std::uint32_t k = 3) {
    generate_request req;
    req.prompt_tokens = std::move(prompt);
    req.sampling.temperature = 0.0f;
    req.max_tokens = n;
    req.ignore_eos = true;
    req.speculative.mode = mode;
    req.speculative.max_draft = k;
    req.speculative.adaptive = false;
    return req;
}

/// Greedy generations of several prompts on `fast` with MTP drafting give the tokens `plain` gives; returns the
/// summaries' totals.
generation_summary expect_same_greedy_output(const std::shared_ptr<model>& plain_model,
                                             const std::shared_ptr<model>& mtp_model, std::uint32_t k) {
    session plain(plain_model);
    session fast(mtp_model);
    generation_summary total;
    for (std::uint32_t seed = 1; seed <= 2; ++seed) {
        const auto prompt = random_tokens(20 + 7 * seed, seed); // longer than a batch: catch-up in several passes
        const auto a = test::run_generation(plain, greedy(prompt, 32, speculative_mode::off));
        const auto b = test::run_generation(fast, greedy(prompt, 32, speculative_mode::mtp, k));
        EXPECT_EQ(a.error, "");
        EXPECT_EQ(b.error, "");
        EXPECT_EQ(a.tokens, b.tokens) << "prompt seed " << seed;
        total.drafted_tokens += b.summary.drafted_tokens;
        total.accepted_tokens += b.summary.accepted_tokens;
        total.verify_steps += b.summary.verify_steps;
    }
    return total;
}

TEST(mtp, greedy_output_is_identical_with_the_mtp_block_drafting) {
    const auto plain = load(glm_path(), false);
    const auto fast = load(glm_path(), true);
    ASSERT_NE(fast->mtp(), nullptr);
    const auto drafted0 = fast->speculation().drafted.load();
    for (const std::uint32_t k : {1u, 4u}) { // one token, and chains of the block on its own output
        const auto t = expect_same_greedy_output(plain, fast, k);
        EXPECT_GT(t.verify_steps, 0u);
        EXPECT_GT(t.drafted_tokens, t.verify_steps * (k > 1 ? 1 : 0)); // k > 1: chains of several drafts
        EXPECT_LE(t.accepted_tokens, t.drafted_tokens);
        std::printf("k=%u: %u drafted, %u accepted (random weights)\n", k, t.drafted_tokens, t.accepted_tokens);
    }
    EXPECT_GT(fast->speculation().drafted.load(), drafted0); // the model's counters (/metrics) moved too
}

TEST(mtp, greedy_output_is_identical_with_streamed_experts) {
    const auto plain = load(glm_path(), false);
    const auto resident = load(glm_path(), true);
    // Dense weights, caches, the MTP share and a few expert slots: the main stack's experts stream.
    const auto& p = resident->plan();
    const std::uint64_t budget = p.planned_bytes() - p.expert_bytes + 6 * p.slot_bytes;
    const auto streamed = load(glm_path(), true, budget);
    ASSERT_TRUE(streamed->plan().streams());
    ASSERT_NE(streamed->mtp(), nullptr);
    EXPECT_LE(streamed->plan().planned_bytes(), budget);
    const auto t = expect_same_greedy_output(plain, streamed, 3);
    EXPECT_GT(t.drafted_tokens, 0u);
    EXPECT_GT(streamed->expert_counters().misses, 0u);
}

// Draft-guided prefetch: with streamed experts, the experts each drafted token chose at its latest earlier
// occurrence are read before the verification; the output is the same with and without it.
TEST(draft_prefetch, reads_the_experts_of_drafted_tokens_ahead_and_keeps_the_output) {
    const auto resident = load(glm_path(), false);
    const auto& p = resident->plan();
    const std::uint64_t budget = p.planned_bytes() - p.expert_bytes + 6 * p.slot_bytes;
    const auto on = load(glm_path(), false, budget, true);
    const auto off = load(glm_path(), false, budget, false);
    ASSERT_TRUE(on->plan().streams() && off->plan().streams());
    // A prompt that repeats itself: prompt lookup drafts from its earlier copies.
    auto prompt = random_tokens(16, 5);
    for (int i = 0; i < 2; ++i) {
        prompt.insert(prompt.end(), prompt.begin(), prompt.begin() + 16);
    }
    session a(on);
    session b(off);
    const auto with = test::run_generation(a, greedy(prompt, 24, speculative_mode::lookup, 3));
    const auto without = test::run_generation(b, greedy(prompt, 24, speculative_mode::lookup, 3));
    ASSERT_EQ(with.error, "");
    ASSERT_EQ(without.error, "");
    EXPECT_EQ(with.tokens, without.tokens);
    EXPECT_GT(with.summary.drafted_tokens, 0u);
}

/// A streamed tiny GLM with `slots` expert slots, and a cache that keeps routing after a pass over 40 random tokens.
struct routed_pass {
    void run(std::uint64_t slots) {
        const auto resident = load(glm_path(), false);
        const auto& p = resident->plan();
        m = load(glm_path(), false, p.planned_bytes() - p.expert_bytes + slots * p.slot_bytes);
        ASSERT_TRUE(m->plan().streams());
        const auto& hp = m->hparams();
        cache = std::make_unique<models::kv_cache>(models::cache_layout_of(m->arch(), hp), 128, quant_type::f16, 16);
        cache->keep_routing(hp.n_layer, hp.n_expert_used);
        models::forward_runner runner(m->arch(), hp, m->weights(), m->pool(), m->experts(), 16);
        history = random_tokens(40, 11);
        std::vector<float> logits;
        ASSERT_TRUE(
            run_sync<result<void>>([&] { return runner.forward(*cache, history, models::logits_mode::last, logits); }));
    }

    std::shared_ptr<model> m;
    std::unique_ptr<models::kv_cache> cache;
    std::vector<std::int32_t> history;
};

// The prediction itself: a cache that keeps routing holds each position's chosen experts (none in the dense layer),
// and the prefetch asks, layer by layer, for the distinct experts the tokens' latest occurrences chose.
TEST(draft_prefetch, asks_for_the_experts_the_tokens_latest_occurrences_chose) {
    routed_pass r;
    ASSERT_NO_FATAL_FAILURE(r.run(6));
    const auto& m = r.m;
    const auto& hp = m->hparams();
    auto& cache = *r.cache;
    const auto& history = r.history;
    for (std::size_t pos = 0; pos < history.size(); ++pos) {
        for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
            for (std::uint32_t j = 0; j < hp.n_expert_used; ++j) {
                const auto e = cache.routing_row(pos)[il * hp.n_expert_used + j];
                if (hp.moe_layer(il)) {
                    EXPECT_TRUE(e >= 0 && e < static_cast<std::int32_t>(hp.n_expert)) << pos << " " << il;
                } else {
                    EXPECT_EQ(e, -1);
                }
            }
        }
    }
    // Two tokens of the history (their latest positions) and one never seen.
    const std::vector<std::int32_t> tokens{history[30], history[7], 600};
    std::size_t expected = 0;
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        std::set<std::int32_t> ids;
        for (const auto t : {history[30], history[7]}) {
            const auto pos =
                static_cast<std::size_t>(std::find(history.rbegin(), history.rend(), t) - history.rbegin());
            const auto* row = cache.routing_row(history.size() - 1 - pos);
            for (std::uint32_t j = 0; j < hp.n_expert_used; ++j) {
                if (row[il * hp.n_expert_used + j] >= 0) {
                    ids.insert(row[il * hp.n_expert_used + j]);
                }
            }
        }
        expected += ids.size();
    }
    ASSERT_GT(expected, 0u);
    const auto asked = run_sync<std::size_t>([&] {
        return speculation::prefetch_draft_experts(m->experts(), cache, history, tokens, hp.n_layer, hp.n_expert_used,
                                                   100);
    });
    EXPECT_EQ(asked, expected);
    const auto capped = run_sync<std::size_t>([&] {
        return speculation::prefetch_draft_experts(m->experts(), cache, history, tokens, hp.n_layer, hp.n_expert_used,
                                                   2);
    });
    EXPECT_EQ(capped, 2u);
    const std::vector<std::int32_t> unseen{600, 601};
    EXPECT_EQ(run_sync<std::size_t>([&] {
                  return speculation::prefetch_draft_experts(m->experts(), cache, history, unseen, hp.n_layer,
                                                             hp.n_expert_used, 100);
              }),
              0u);
}

// The expected cost of a verification's positions: each token's predicted experts that the expert cache neither
// holds nor reads, less those an earlier token of the step named. After the draft-guided prefetch has asked for them,
// none is missing; a token never seen has no prediction.
TEST(draft_prefetch, predicts_each_positions_new_reads_from_the_expert_caches_state) {
    const auto hp0 = load(glm_path(), false)->hparams();
    std::uint64_t routed = 0;
    for (std::uint32_t il = 0; il < hp0.n_layer; ++il) {
        routed += hp0.moe_layer(il) ? hp0.n_expert : 0;
    }
    // Room for half the routed experts, twice what two tokens name: a pass leaves some of theirs out, and a prefetch
    // of them all evicts none of them.
    routed_pass r;
    ASSERT_NO_FATAL_FAILURE(r.run(routed / 2));
    const auto& m = r.m;
    const auto& hp = m->hparams();
    auto& cache = *r.cache;
    const auto& history = r.history;
    ASSERT_GE(m->plan().cache_slots, 2 * 2 * hp.n_expert_used);
    // The two tokens' experts per layer: the first token's, then the second's that the first did not name.
    const std::vector<std::int32_t> tokens{history[30], history[7], 600};
    std::vector<const std::int16_t*> rows;
    speculation::latest_routing_rows(cache, history, tokens, rows);
    ASSERT_EQ(rows.size(), 3u);
    ASSERT_NE(rows[0], nullptr);
    ASSERT_NE(rows[1], nullptr);
    EXPECT_EQ(rows[2], nullptr);
    double first = 0.0;
    double second = 0.0;
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        std::set<std::int32_t> a;
        std::set<std::int32_t> b;
        for (std::uint32_t j = 0; j < hp.n_expert_used; ++j) {
            if (const auto e = rows[0][il * hp.n_expert_used + j]; e >= 0) {
                a.insert(e);
            }
        }
        for (std::uint32_t j = 0; j < hp.n_expert_used; ++j) {
            if (const auto e = rows[1][il * hp.n_expert_used + j]; e >= 0 && a.count(e) == 0) {
                b.insert(e);
            }
        }
        first += static_cast<double>(m->experts().count_missing(il, std::vector<std::int32_t>(a.begin(), a.end())));
        second += static_cast<double>(m->experts().count_missing(il, std::vector<std::int32_t>(b.begin(), b.end())));
    }
    std::vector<double> misses;
    speculation::predicted_misses(m->experts(), cache, history, tokens, hp.n_layer, hp.n_expert_used, misses);
    ASSERT_EQ(misses.size(), 3u);
    EXPECT_EQ(misses[0], first);
    EXPECT_EQ(misses[1], second);
    EXPECT_EQ(misses[2], -1.0);
    EXPECT_GT(misses[0] + misses[1], 0.0) << "the pass over 40 tokens left some of these experts out of the cache";
    run_sync<std::size_t>([&] {
        return speculation::prefetch_draft_experts(m->experts(), cache, history, tokens, hp.n_layer, hp.n_expert_used,
                                                   1000);
    });
    speculation::predicted_misses(m->experts(), cache, history, tokens, hp.n_layer, hp.n_expert_used, misses);
    EXPECT_EQ(misses[0], 0.0);
    EXPECT_EQ(misses[1], 0.0);
    // A cache that keeps no routing predicts nothing.
    models::kv_cache plain(models::cache_layout_of(m->arch(), hp), 128, quant_type::f16, 16);
    speculation::predicted_misses(m->experts(), plain, {}, tokens, hp.n_layer, hp.n_expert_used, misses);
    EXPECT_TRUE(misses.empty());
}

/// Overwrites an F32 tensor of `path` with zeros.
void zero_tensor(const std::filesystem::path& path, const std::string& name) {
    auto files = gguf::model_files::open(path);
    ASSERT_TRUE(files) << files.error().message;
    const auto* t = files->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->type, quant_type::f32);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(t->offset));
    const std::vector<char> zeros(t->bytes, 0);
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    ASSERT_TRUE(f.good());
}

// With both output norms zero, every logit of the model and of the block is 0, so both choose token 0: the block
// agrees with the model by construction, and every drafted token must be accepted (drafts chained 4 deep).
TEST(mtp, a_block_that_agrees_with_the_model_has_every_draft_accepted) {
    const auto path = test::scratch_dir() / "glm4moe-agreeing-mtp.gguf";
    std::filesystem::copy_file(glm_path(), path, std::filesystem::copy_options::overwrite_existing);
    const auto hp = load(path, false)->hparams();
    zero_tensor(path, models::tensor_name(models::tensor_kind::output_norm));
    zero_tensor(path, models::tensor_name(models::tensor_kind::nextn_shared_head_norm, hp.n_layer));
    const auto m = load(path, true);
    session s(m);
    const auto g = test::run_generation(s, greedy(random_tokens(12, 9), 25, speculative_mode::mtp, 4));
    ASSERT_EQ(g.error, "");
    ASSERT_EQ(g.tokens.size(), 25u);
    for (const auto t : g.tokens) {
        EXPECT_EQ(t, 0);
    }
    EXPECT_GT(g.summary.drafted_tokens, 10u);
    EXPECT_EQ(g.summary.accepted_tokens, g.summary.drafted_tokens);
    EXPECT_LT(g.summary.verify_steps, 10u); // five tokens a step
}

// --- one memory budget -------------------------------------------------------------------------------------

TEST(mtp, the_plan_counts_the_block_s_experts_caches_and_buffers_inside_the_budget) {
    const auto without = load(glm_path(), false);
    const auto with = load(glm_path(), true);
    const auto& plan = with->plan();
    EXPECT_EQ(without->plan().mtp_bytes, 0u);
    // The block's routed experts are held only with MTP on, and the plan counts them and more (caches, buffers).
    const auto extra = with->resident_bytes() - without->resident_bytes();
    EXPECT_GT(extra, 0u);
    EXPECT_GT(plan.mtp_bytes, extra);
    EXPECT_LE(plan.planned_bytes(), plan.budget);
    EXPECT_TRUE(sluice::to_json(plan).contains("mtp_bytes"));
    EXPECT_EQ(plan.planned_bytes(), without->plan().planned_bytes() + plan.mtp_bytes);
    // A budget that cannot hold the block's share is refused with the numbers.
    const auto refused = try_load(glm_path(), true, plan.mtp_bytes / 2);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("MTP block"), std::string::npos) << refused.error().message;
    // One that holds the block's share but not the model beside it says so, and that the model alone may fit
    // (the plan's own message speaks of the budget left after the block).
    const auto squeezed = try_load(glm_path(), true, plan.mtp_bytes + (1u << 20));
    ASSERT_FALSE(squeezed);
    EXPECT_NE(squeezed.error().message.find("less the MTP block's"), std::string::npos) << squeezed.error().message;
    EXPECT_NE(squeezed.error().message.find("without --mtp"), std::string::npos) << squeezed.error().message;
}

// --- files and requests without it -----------------------------------------------------------------------

TEST(mtp, a_file_without_mtp_layers_asked_for_mtp_is_refused_at_load) {
    const auto r = try_load(test::tiny_model("qwen3moe", quant_type::q8_0), true);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("no multi-token prediction"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("--mtp"), std::string::npos) << r.error().message;
}

TEST(mtp, a_draft_model_beside_mtp_is_loaded_without_asking_it_for_mtp_layers) {
    // --mtp and --draft together: the target holds its MTP block, the draft model is a plain model (asking the
    // draft file for MTP layers refused every draft that had none).
    model_options o;
    o.n_ctx = 256;
    o.n_batch = 16;
    o.n_threads = 1;
    o.mtp = true;
    o.disk_bandwidth = 1;
    o.draft_model = test::tiny_model("qwen3", quant_type::q8_0).string();
    const auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(glm_path(), o); });
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_NE((*m)->mtp(), nullptr);
    EXPECT_NE((*m)->draft(), nullptr);
}

TEST(mtp, a_model_with_recurrent_layers_asked_for_mtp_is_refused_at_load) {
    const auto r = try_load(test::tiny_model("qwen35moe", quant_type::q8_0), true);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("recurrent"), std::string::npos) << r.error().message;
}

TEST(mtp, a_file_with_mtp_layers_loads_and_generates_without_them) {
    const auto m = load(glm_path(), false);
    EXPECT_EQ(m->mtp(), nullptr);
    ASSERT_EQ(m->hparams().hybrid.nextn_layers, 1u);
    ASSERT_EQ(m->weights().nextn.size(), 1u);
    EXPECT_EQ(m->weights().nextn.front().gate_exps.data, nullptr); // the block's experts stay on disk
    session s(m);
    const auto g = test::run_generation(s, greedy(random_tokens(10, 4), 8, speculative_mode::off));
    EXPECT_EQ(g.error, "");
    EXPECT_EQ(g.tokens.size(), 8u);
    // Asking for the block it was loaded without fails the request, naming the mode.
    const auto refused = test::run_generation(s, greedy(random_tokens(10, 4), 8, speculative_mode::mtp));
    EXPECT_NE(refused.error.find("speculative.mode \"mtp\""), std::string::npos) << refused.error;
}

} // namespace
} // namespace sluice
