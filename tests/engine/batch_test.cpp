// Continuous batching: the step planner (budget, FIFO, chunks), a multi-sequence forward step against each sequence
// run alone (standard, hybrid, MLA and windowed attention), and many sessions on one model sharing the batch engine
// with the same greedy tokens as alone (the bundled model's held-out questions), including a cancelled one.
#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/experts/expert_cache.hpp"
#include "runtime/models/forward.hpp"
#include "runtime/tokenizer/tokenizer.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

namespace sluice {
namespace {

using kernels::quant_type;
using test::load_model;
using test::random_tokens;
using test::run_sync;
using test::tiny_model;

// The step planner ----------------------------------------------------------------------------------------

TEST(plan_step, decodes_go_first_then_prompt_chunks_oldest_first_within_the_budget) {
    // A long prompt queued first, two decodes, a second prompt.
    const std::vector<step_candidate> q{{300, 512}, {1, 512}, {40, 512}, {1, 512}};
    const auto s = plan_step(q, 64, 16);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].index, 0u);
    EXPECT_EQ(s[0].tokens, 62u); // what the two decodes left of the budget
    EXPECT_EQ(s[1].index, 1u);
    EXPECT_EQ(s[1].tokens, 1u);
    EXPECT_EQ(s[2].index, 3u);
    EXPECT_EQ(s[2].tokens, 1u); // the second prompt waits for the first (FIFO)
}

TEST(plan_step, a_chunk_stops_at_its_caches_batch_and_the_next_prompt_gets_the_rest) {
    const std::vector<step_candidate> q{{100, 16}, {30, 512}};
    const auto s = plan_step(q, 64, 16);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].tokens, 16u);
    EXPECT_EQ(s[1].tokens, 30u);
}

TEST(plan_step, more_decodes_than_the_budget_wait_their_turn_in_order) {
    const std::vector<step_candidate> q(10, step_candidate{1, 8});
    const auto s = plan_step(q, 4, 16);
    ASSERT_EQ(s.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(s[i].index, i);
    }
    EXPECT_EQ(plan_step(q, 64, 3).size(), 3u); // the sequence cap
    EXPECT_TRUE(plan_step({}, 64, 16).empty());
}

// One forward step for several sequences ----------------------------------------------------------------

struct arch_case {
    std::string arch;
    quant_type type;
};

class batched_step : public ::testing::TestWithParam<arch_case> {};

// Each sequence's logits when run alone (its prompt, then its decode tokens one by one) and in steps shared with the
// others (all prompts in one step, then a step mixing one prompt's second half with the others' decodes, then
// decodes together) agree to the tolerance of batched against single-token kernels, and choose the same tokens.
TEST_P(batched_step, several_sequences_in_one_step_match_each_alone) {
    const auto m = load_model(tiny_model(GetParam().arch, GetParam().type), 64, 128);
    const auto n_vocab = m->hparams().n_vocab;
    const std::vector<std::size_t> prompt_len{5, 13, 1, 9};
    const std::size_t n_seq = prompt_len.size(), n_decode = 4;
    std::vector<std::vector<std::int32_t>> prompts, decodes;
    for (std::size_t i = 0; i < n_seq; ++i) {
        prompts.push_back(random_tokens(prompt_len[i], 100 + static_cast<std::uint32_t>(i)));
        decodes.push_back(random_tokens(n_decode, 200 + static_cast<std::uint32_t>(i)));
    }
    const auto layout = models::cache_layout_of(m->arch(), m->hparams());
    // Alone: [prompt rows..., decode rows...] of logits per sequence.
    std::vector<std::vector<float>> alone(n_seq), batched(n_seq);
    for (std::size_t i = 0; i < n_seq; ++i) {
        models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), 64);
        models::kv_cache cache(layout, 128);
        std::vector<float> logits;
        auto r =
            run_sync<result<void>>([&] { return runner.forward(cache, prompts[i], models::logits_mode::all, logits); });
        ASSERT_TRUE(r) << r.error().message;
        alone[i] = logits;
        for (const auto t : decodes[i]) {
            r = run_sync<result<void>>(
                [&] { return runner.forward(cache, std::span(&t, 1), models::logits_mode::last, logits); });
            ASSERT_TRUE(r) << r.error().message;
            alone[i].insert(alone[i].end(), logits.begin(), logits.end());
        }
    }
    // Batched: sequence 1's prompt in two halves, the second half in the same step as the others' first decode.
    models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), 64);
    std::vector<models::kv_cache> caches;
    for (std::size_t i = 0; i < n_seq; ++i) {
        caches.emplace_back(layout, 128);
        batched[i].resize((prompt_len[i] + n_decode) * n_vocab);
    }
    using step = models::forward_runner::sequence_step;
    auto run = [&](std::vector<step> steps) {
        auto r = run_sync<result<void>>([&] { return runner.forward_step(steps, 4); });
        ASSERT_TRUE(r) << r.error().message;
    };
    const std::size_t half = 6;
    std::vector<step> first;
    for (std::size_t i = 0; i < n_seq; ++i) {
        const std::size_t n = i == 1 ? half : prompt_len[i];
        first.push_back(
            {&caches[i], std::span(prompts[i]).first(n), 0, static_cast<std::uint32_t>(n), batched[i].data()});
    }
    run(first);
    std::vector<std::size_t> decoded(n_seq, 0);
    std::vector<step> second;
    for (std::size_t i = 0; i < n_seq; ++i) {
        if (i == 1) {
            const auto rest = std::span(prompts[1]).subspan(half);
            second.push_back(
                {&caches[1], rest, 0, static_cast<std::uint32_t>(rest.size()), batched[1].data() + half * n_vocab});
        } else {
            second.push_back(
                {&caches[i], std::span(decodes[i]).first(1), 0, 1, batched[i].data() + prompt_len[i] * n_vocab});
            decoded[i] = 1;
        }
    }
    run(second);
    for (bool more = true; more;) {
        more = false;
        std::vector<step> next;
        for (std::size_t i = 0; i < n_seq; ++i) {
            if (decoded[i] < n_decode) {
                next.push_back({&caches[i], std::span(decodes[i]).subspan(decoded[i], 1), 0, 1,
                                batched[i].data() + (prompt_len[i] + decoded[i]) * n_vocab});
                ++decoded[i];
                more = true;
            }
        }
        if (more) {
            run(next);
        }
    }
    for (std::size_t i = 0; i < n_seq; ++i) {
        ASSERT_EQ(alone[i].size(), batched[i].size());
        EXPECT_EQ(caches[i].size(), prompt_len[i] + n_decode);
        float max_abs = 0.0f, max_diff = 0.0f;
        for (std::size_t j = 0; j < alone[i].size(); ++j) {
            ASSERT_TRUE(std::isfinite(batched[i][j]));
            max_abs = std::max(max_abs, std::abs(alone[i][j]));
            max_diff = std::max(max_diff, std::abs(alone[i][j] - batched[i][j]));
        }
        EXPECT_GT(max_abs, 0.1f);
        EXPECT_LE(max_diff, 1e-4f * max_abs) << "sequence " << i << ": max |logit| " << max_abs;
        for (std::size_t row = 0; row < alone[i].size() / n_vocab; ++row) {
            const auto a = alone[i].begin() + static_cast<std::ptrdiff_t>(row * n_vocab);
            const auto b = batched[i].begin() + static_cast<std::ptrdiff_t>(row * n_vocab);
            EXPECT_EQ(std::max_element(a, a + n_vocab) - a, std::max_element(b, b + n_vocab) - b)
                << "sequence " << i << " row " << row;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(engine, batched_step,
                         ::testing::Values(arch_case{"qwen3moe", quant_type::q8_0},
                                           arch_case{"qwen3", quant_type::q4_k},
                                           arch_case{"qwen35moe", quant_type::q8_0},
                                           arch_case{"deepseek2", quant_type::q8_0},
                                           arch_case{"gpt-oss", quant_type::q8_0}),
                         [](const auto& info) {
                             std::string n = info.param.arch;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

// A yield hook that, at its first chance, runs another sequence's prompt as a step on a second runner.
class prompt_between_layers final : public models::yield_hook {
public:
    prompt_between_layers(models::forward_runner& other, models::kv_cache& cache, std::span<const std::int32_t> prompt,
                          std::vector<float>& logits)
        : other_(&other), cache_(&cache), prompt_(prompt), logits_(&logits) {}
    [[nodiscard]] bool wanted() const noexcept override { return calls == 0; }
    boost::asio::awaitable<void> run() override {
        ++calls;
        logits_->resize(std::size_t{other_->hparams().n_vocab});
        const models::forward_runner::sequence_step st{cache_, prompt_, static_cast<std::uint32_t>(prompt_.size() - 1),
                                                       1, logits_->data()};
        outcome = co_await other_->forward_step(std::span(&st, 1));
    }
    int calls = 0;
    result<void> outcome = make_error(std::errc::operation_not_permitted, "not run");

private:
    models::forward_runner* other_;
    models::kv_cache* cache_;
    std::span<const std::int32_t> prompt_;
    std::vector<float>* logits_;
};

// A step that makes way between two layers for another runner's prompt (the batch engine's prefill step) computes
// exactly what it computes without stopping, and the prompt run in between gets the logits it gets alone.
TEST(forward_step, a_step_that_makes_way_between_layers_computes_the_same_logits) {
    const auto m = load_model(tiny_model("qwen3moe", quant_type::q8_0), 64, 128);
    ASSERT_GE(m->hparams().n_layer, 2u);
    const auto n_vocab = std::size_t{m->hparams().n_vocab};
    const auto layout = models::cache_layout_of(m->arch(), m->hparams());
    const std::vector<std::vector<std::int32_t>> prompts{random_tokens(5, 300), random_tokens(9, 301),
                                                         random_tokens(3, 302)};
    const auto side_prompt = random_tokens(7, 303);
    using step = models::forward_runner::sequence_step;
    // The sequences' step, with or without a hook; [sequence][rows of its logits].
    auto run_step = [&](models::yield_hook* hook) {
        models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), 64);
        std::vector<models::kv_cache> caches;
        std::vector<std::vector<float>> logits(prompts.size());
        std::vector<step> steps;
        caches.reserve(prompts.size());
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            caches.emplace_back(layout, 128);
            logits[i].resize(prompts[i].size() * n_vocab);
            steps.push_back({&caches[i], prompts[i], 0, static_cast<std::uint32_t>(prompts[i].size()),
                             logits[i].data()});
        }
        auto r = run_sync<result<void>>([&] { return runner.forward_step(steps, 0, hook); });
        EXPECT_TRUE(r) << r.error().message;
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            EXPECT_EQ(caches[i].size(), prompts[i].size());
        }
        return logits;
    };
    const auto straight = run_step(nullptr);
    models::forward_runner other(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), 16);
    models::kv_cache side_cache(layout, 128);
    std::vector<float> side_logits;
    prompt_between_layers hook(other, side_cache, side_prompt, side_logits);
    const auto made_way = run_step(&hook);
    EXPECT_EQ(hook.calls, 1);
    ASSERT_TRUE(hook.outcome) << hook.outcome.error().message;
    EXPECT_EQ(made_way, straight) << "stopping between layers changed the step's logits";
    // The prompt run in between, against the same prompt alone.
    models::forward_runner alone_runner(m->arch(), m->hparams(), m->weights(), m->pool(), m->experts(), 16);
    models::kv_cache alone_cache(layout, 128);
    std::vector<float> alone;
    auto r = run_sync<result<void>>(
        [&] { return alone_runner.forward(alone_cache, side_prompt, models::logits_mode::last, alone); });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(side_cache.size(), side_prompt.size());
    EXPECT_EQ(side_logits, alone);
}

// Many sessions on one model ----------------------------------------------------------------------------

std::shared_ptr<model> bundled() {
    static const auto m = load_model(std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf", 64, 256);
    return m;
}

std::vector<std::string> questions(std::size_t n) {
    std::ifstream in(std::filesystem::path(SLUICE_SOURCE_DIR) / "tests/fixtures/trained/heldout.jsonl");
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) {
            all.push_back(std::string(boost::json::parse(line).as_object().at("question").as_string()));
        }
    }
    // Every eleventh row: a mix of the tasks (the file groups them).
    std::vector<std::string> out;
    for (std::size_t i = 0; i < all.size() && out.size() < n; i += 11) {
        out.push_back(all[i]);
    }
    return out;
}

generate_request greedy(const std::string& question, std::uint32_t max_tokens = 24) {
    generate_request req;
    req.messages = boost::json::array{boost::json::object{{"role", "user"}, {"content", question}}};
    req.sampling.temperature = 0.0f;
    req.max_tokens = max_tokens;
    return req;
}

struct outcome {
    std::vector<std::int32_t> tokens;
    generation_summary summary;
    std::string error;
};

boost::asio::awaitable<void> consume(session& s, generate_request req, outcome& o, std::size_t cancel_after = 0,
                                     std::function<void()> on_cancel_point = {}) {
    auto stream = s.generate(std::move(req));
    while (true) {
        auto ev = co_await stream.next();
        if (!ev) {
            o.error = ev.error().message;
            break;
        }
        if (!*ev) {
            break;
        }
        if ((*ev)->token >= 0) {
            o.tokens.push_back((*ev)->token);
            if (cancel_after != 0 && o.tokens.size() == cancel_after && on_cancel_point) {
                on_cancel_point();
            }
        }
    }
    o.summary = stream.summary();
}

// Runs every request at once, each on its own session of `m`, on one io_context.
std::vector<outcome> concurrently(const std::shared_ptr<model>& m, const std::vector<generate_request>& reqs) {
    boost::asio::io_context io;
    std::vector<std::unique_ptr<session>> sessions;
    std::vector<outcome> out(reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        sessions.push_back(std::make_unique<session>(m));
        boost::asio::co_spawn(io, consume(*sessions[i], reqs[i], out[i]), boost::asio::detached);
    }
    io.run();
    return out;
}

class concurrent_sessions : public ::testing::TestWithParam<std::size_t> {};

// With greedy sampling each request's tokens in a batch of 1, 4 or 8 concurrent sessions are those it gets alone,
// and the engine did run several sequences in one step.
TEST_P(concurrent_sessions, greedy_tokens_equal_each_request_alone) {
    const auto m = bundled();
    const std::size_t n = GetParam();
    const auto qs = questions(n);
    ASSERT_EQ(qs.size(), n);
    std::vector<generate_request> reqs;
    std::vector<outcome> alone;
    for (const auto& q : qs) {
        reqs.push_back(greedy(q));
        alone.push_back(concurrently(m, {reqs.back()}).front());
        ASSERT_EQ(alone.back().error, "");
        ASSERT_FALSE(alone.back().tokens.empty());
    }
    const auto before = m->batch()->counters();
    const auto together = concurrently(m, reqs);
    const auto after = m->batch()->counters();
    for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(together[i].error, "");
        EXPECT_EQ(together[i].tokens, alone[i].tokens) << "question: " << qs[i];
        EXPECT_EQ(together[i].summary.reason, alone[i].summary.reason);
    }
    if (n > 1) {
        EXPECT_GT(after.sequence_rows - before.sequence_rows, after.steps - before.steps)
            << "no step held more than one sequence";
        EXPECT_GE(after.widest_step, 2u);
    }
}

INSTANTIATE_TEST_SUITE_P(engine, concurrent_sessions, ::testing::Values(1u, 4u, 8u));

// The bundled model with its experts streamed through an expert cache of 12 slots (of 128 experts): concurrent
// sessions fetch each step's distinct experts once, through the cache and io_uring, and still answer as alone.
TEST(concurrent_sessions, streamed_experts_batched_answer_as_alone) {
    const auto path = std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf";
    const auto resident = load_model(path, 64, 256);
    const auto& p = resident->plan();
    model_options o;
    o.n_batch = 64;
    o.n_ctx = 256;
    o.n_threads = 2;
    o.memory_budget =
        p.dense_bytes + p.kv_bytes + p.checkpoint_bytes + p.compute_bytes + 12 * p.slot_bytes + p.slot_bytes / 2;
    o.disk_bandwidth = 1e9;
    auto loaded = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    ASSERT_TRUE(loaded) << loaded.error().message;
    const auto m = *loaded;
    ASSERT_TRUE(m->plan().streams());
    const auto qs = questions(6);
    std::vector<generate_request> reqs;
    std::vector<outcome> alone;
    for (const auto& q : qs) {
        reqs.push_back(greedy(q));
        alone.push_back(concurrently(resident, {reqs.back()}).front());
    }
    const auto reads_before = m->expert_counters();
    const auto together = concurrently(m, reqs);
    for (std::size_t i = 0; i < qs.size(); ++i) {
        EXPECT_EQ(together[i].error, "");
        EXPECT_EQ(together[i].tokens, alone[i].tokens) << "question: " << qs[i];
    }
    EXPECT_GE(m->batch()->counters().widest_step, 2u);
    EXPECT_GT(m->expert_counters().misses, reads_before.misses); // the experts did stream
}

// A request cancelled while others generate leaves at a step boundary as cancelled; the others are unchanged.
TEST(concurrent_sessions, cancelling_one_of_several_leaves_the_others_exact) {
    const auto m = bundled();
    const auto qs = questions(4);
    std::vector<generate_request> reqs;
    std::vector<outcome> alone;
    for (const auto& q : qs) {
        auto req = greedy(q, 40);
        req.ignore_eos = true; // long enough to be cancelled mid-way
        reqs.push_back(req);
        alone.push_back(concurrently(m, {req}).front());
    }
    boost::asio::io_context io;
    boost::asio::cancellation_signal signal;
    std::vector<std::unique_ptr<session>> sessions;
    std::vector<outcome> out(reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        sessions.push_back(std::make_unique<session>(m));
        if (i == 2) {
            auto cancel = [&] {
                boost::asio::post(io, [&] { signal.emit(boost::asio::cancellation_type::terminal); });
            };
            boost::asio::co_spawn(io, consume(*sessions[i], reqs[i], out[i], 5, cancel),
                                  boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::detached));
        } else {
            boost::asio::co_spawn(io, consume(*sessions[i], reqs[i], out[i]), boost::asio::detached);
        }
    }
    io.run();
    EXPECT_EQ(out[2].summary.reason, finish_reason::cancelled);
    EXPECT_EQ(out[2].error, "");
    EXPECT_GE(out[2].tokens.size(), 5u);
    EXPECT_LT(out[2].tokens.size(), alone[2].tokens.size());
    EXPECT_EQ(std::vector(alone[2].tokens.begin(),
                          alone[2].tokens.begin() + static_cast<std::ptrdiff_t>(out[2].tokens.size())),
              out[2].tokens);
    for (const std::size_t i : {0u, 1u, 3u}) {
        EXPECT_EQ(out[i].error, "");
        EXPECT_EQ(out[i].tokens, alone[i].tokens) << "request " << i;
    }
    // The cancelled session's next request (reusing what its cache holds) is exact.
    outcome again;
    run_sync<bool>([&]() -> boost::asio::awaitable<bool> {
        co_await consume(*sessions[2], reqs[2], again);
        co_return true;
    });
    EXPECT_EQ(again.error, "");
    EXPECT_EQ(again.tokens, alone[2].tokens);
    EXPECT_GT(again.summary.cached_tokens, 0u);
}

// A request that comes while other sessions decode gets its prompt run as a prefill step of its own (ahead of the
// next step, or between two layers of the step in progress) and, like the others, answers as it does alone.
TEST(concurrent_sessions, a_prompt_beside_decoding_sessions_runs_as_a_prefill_step_and_answers_as_alone) {
    const auto m = bundled();
    const auto qs = questions(5);
    std::vector<generate_request> reqs;
    std::vector<outcome> alone;
    for (std::size_t i = 0; i < qs.size(); ++i) {
        auto req = greedy(qs[i], 32);
        req.ignore_eos = i < 4; // the first four are still decoding when the fifth comes
        reqs.push_back(req);
        alone.push_back(concurrently(m, {req}).front());
        ASSERT_EQ(alone.back().error, "");
    }
    const auto before = m->batch()->counters();
    boost::asio::io_context io;
    std::vector<std::unique_ptr<session>> sessions;
    std::vector<outcome> out(reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        sessions.push_back(std::make_unique<session>(m));
    }
    std::size_t prefill_steps_when_fifth_came = 0;
    auto fifth = [&] { // after the fourth session's third token
        prefill_steps_when_fifth_came = m->batch()->counters().prefill_steps;
        boost::asio::co_spawn(io, consume(*sessions[4], reqs[4], out[4]), boost::asio::detached);
    };
    for (std::size_t i = 0; i < 4; ++i) {
        boost::asio::co_spawn(io, i == 3 ? consume(*sessions[i], reqs[i], out[i], 3, fifth)
                                         : consume(*sessions[i], reqs[i], out[i]),
                              boost::asio::detached);
    }
    io.run();
    const auto after = m->batch()->counters();
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(out[i].error, "");
        EXPECT_EQ(out[i].tokens, alone[i].tokens) << "request " << i;
    }
    EXPECT_GT(after.prefill_steps, prefill_steps_when_fifth_came) << "the fifth prompt did not run as a prefill step";
    EXPECT_GT(prefill_steps_when_fifth_came, before.prefill_steps); // the first four prompts did too
    EXPECT_GE(after.widest_step, 2u);
}

// Cross-slot prompt reuse: a session whose own cache is empty copies the longest prefix another session of the model
// holds (`cached_tokens` says how much), and answers as a session on a separate copy of the model that computed
// the whole prompt.
TEST(concurrent_sessions, a_new_session_copies_the_longest_prefix_another_session_holds) {
    const auto m = load_model(std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf", 64, 256);
    const auto separate = load_model(std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf", 64, 256);
    const auto qs = questions(3);
    // Two turns of one conversation: the second repeats the first and its answer.
    auto first = greedy(qs[0]);
    session a(m);
    outcome turn1;
    run_sync<bool>([&]() -> boost::asio::awaitable<bool> {
        co_await consume(a, first, turn1);
        co_return true;
    });
    ASSERT_EQ(turn1.error, "");
    auto second = greedy(qs[1]);
    const std::string answer = m->vocab().decode(turn1.tokens, {.skip_special = true});
    second.messages = boost::json::array{boost::json::object{{"role", "user"}, {"content", qs[0]}},
                                         boost::json::object{{"role", "assistant"}, {"content", answer}},
                                         boost::json::object{{"role", "user"}, {"content", qs[1]}}};
    session b(m); // empty: everything it reuses comes from `a`
    outcome reused, fresh;
    run_sync<bool>([&]() -> boost::asio::awaitable<bool> {
        co_await consume(b, second, reused);
        co_return true;
    });
    session c(separate);
    run_sync<bool>([&]() -> boost::asio::awaitable<bool> {
        co_await consume(c, second, fresh);
        co_return true;
    });
    EXPECT_EQ(reused.error, "");
    EXPECT_GT(reused.summary.cached_tokens, 10u);
    EXPECT_EQ(fresh.summary.cached_tokens, 0u);
    EXPECT_EQ(reused.tokens, fresh.tokens);
    // The donor is intact: its own next turn reuses its whole conversation and answers as the fresh copy does.
    outcome donor_next;
    run_sync<bool>([&]() -> boost::asio::awaitable<bool> {
        co_await consume(a, second, donor_next);
        co_return true;
    });
    EXPECT_EQ(donor_next.tokens, fresh.tokens);
}

} // namespace
} // namespace sluice
