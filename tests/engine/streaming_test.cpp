// Expert streaming on tiny generated models: output identical to fully resident at every budget down to the
// smallest (greedy, sampled, batched and token by token, with and without prefetch), counters that move only
// when experts stream, shared in-flight reads, and read failures that fail a request but not the engine.
#include "runtime/engine/session.hpp"
#include "runtime/experts/expert_cache.hpp"
#include "runtime/models/forward.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

namespace sluice {
namespace {

using kernels::quant_type;
using test::random_tokens;
using test::run_sync;
using test::tiny_model;

model_options base_options(std::uint32_t n_batch) {
    model_options o;
    o.n_batch = n_batch;
    o.n_ctx = 256;
    o.n_threads = 2;
    o.disk_bandwidth = 1e9; // no probe: the tests do not look at the speed bound
    return o;
}

// The budget that leaves room for exactly `slots` expert slots beside everything else.
std::uint64_t budget_for_slots(const std::filesystem::path& path, std::uint64_t slots, const model_options& o) {
    auto files = gguf::model_files::open(path);
    if (!files) {
        throw std::runtime_error(files.error().message);
    }
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(files->kv(), arch);
    auto layout = experts::make_expert_layout(*files, *hp);
    plan_inputs in;
    in.budget = std::uint64_t{1} << 40;
    in.n_ctx = o.n_ctx;
    in.n_batch = o.n_batch;
    in.n_threads = o.n_threads;
    in.cache_layout = models::cache_layout_of(*arch, *hp); // windowed layers keep less
    in.state_checkpoints = o.state_checkpoints;
    auto plan = plan_memory(*files, *hp, *layout, in);
    return plan->dense_bytes + plan->kv_bytes + plan->checkpoint_bytes + plan->compute_bytes +
           slots * layout->slot_bytes + layout->slot_bytes / 2;
}

std::shared_ptr<model> load(const std::filesystem::path& path, model_options o) {
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    if (!m) {
        throw std::runtime_error(m.error().message);
    }
    return *m;
}

std::shared_ptr<model> load_streaming(const std::filesystem::path& path, std::uint64_t slots, std::uint32_t n_batch,
                                      bool prefetch = true, experts::cache_policy policy = experts::cache_policy::lru,
                                      std::uint32_t prefetch_depth = 1, experts::read_scheduler_options reads = {}) {
    auto o = base_options(n_batch);
    o.memory_budget = budget_for_slots(path, slots, o);
    o.prefetch = prefetch;
    o.prefetch_depth = prefetch_depth;
    o.read_order = reads.order;
    o.read_window = reads.window;
    o.cache_policy = policy;
    auto m = load(path, o);
    EXPECT_TRUE(m->plan().streams());
    EXPECT_EQ(m->plan().cache_slots, slots);
    return m;
}

result<std::vector<float>> evaluate(const std::shared_ptr<model>& m, std::span<const std::int32_t> tokens,
                                    bool one_by_one) {
    session s(m);
    std::vector<float> all, logits;
    if (!one_by_one) {
        auto r = run_sync<result<void>>([&] { return s.evaluate(tokens, all); });
        if (!r) {
            return r.error();
        }
        return all;
    }
    for (const auto t : tokens) {
        auto r = run_sync<result<void>>([&] { return s.evaluate(std::span(&t, 1), logits); });
        if (!r) {
            return r.error();
        }
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

struct generated {
    std::vector<std::int32_t> tokens;
    std::string error;
};

/// Every event of `req` on `s`: the tokens, and the error message if the stream ended with one.
generated drain(session& s, generate_request req) {
    return run_sync<generated>([&]() -> boost::asio::awaitable<generated> {
        generated g;
        auto stream = s.generate(std::move(req));
        while (true) {
            auto ev = co_await stream.next();
            if (!ev) {
                g.error = ev.error().message;
                break;
            }
            if (!*ev) {
                break;
            }
            if ((*ev)->token >= 0) {
                g.tokens.push_back((*ev)->token);
            }
        }
        co_return g;
    });
}

generated generate(const std::shared_ptr<model>& m, std::uint64_t seed, float temperature, std::uint32_t n = 16) {
    session s(m);
    generate_request req;
    req.prompt = "The quick brown fox jumps";
    req.sampling.temperature = temperature;
    req.sampling.top_k = 0;
    req.sampling.top_p = 1.0f;
    req.sampling.min_p = 0.0f;
    req.sampling.seed = seed;
    req.max_tokens = n;
    req.ignore_eos = true;
    return drain(s, std::move(req));
}

/// What the resident model computes, for streamed loads of the same file to match: the batched and the
/// token-by-token logits of `tokens`, a greedy and a sampled generation.
struct resident_reference {
    std::shared_ptr<model> resident;
    std::vector<float> batched, single; // empty when the resident evaluation failed (the test then stops)
    generated greedy, sampled;

    resident_reference(const std::filesystem::path& path, std::span<const std::int32_t> tokens)
        : resident(load(path, base_options(16))), greedy(generate(resident, 1, 0.0f)),
          sampled(generate(resident, 7, 1.0f)) {
        if (auto b = evaluate(resident, tokens, false)) {
            batched = std::move(*b);
        }
        if (auto s = evaluate(resident, tokens, true)) {
            single = std::move(*s);
        }
    }

    /// Routed experts over every MoE layer.
    [[nodiscard]] std::uint64_t routed_experts() const {
        const auto& hp = resident->hparams();
        return std::uint64_t{hp.n_expert} * (hp.n_layer - hp.routing.leading_dense);
    }

    /// `m` computes the same logits and generations.
    void expect_same(const std::shared_ptr<model>& m, std::span<const std::int32_t> tokens) const {
        EXPECT_EQ(*evaluate(m, tokens, false), batched);
        EXPECT_EQ(*evaluate(m, tokens, true), single);
        EXPECT_EQ(generate(m, 1, 0.0f).tokens, greedy.tokens);
        EXPECT_EQ(generate(m, 7, 1.0f).tokens, sampled.tokens);
    }
};

struct stream_case {
    std::string arch;
    quant_type type;
};

class every_moe_arch : public ::testing::TestWithParam<stream_case> {};

TEST_P(every_moe_arch, streaming_output_is_identical_to_resident_at_every_budget) {
    const auto path = tiny_model(GetParam().arch, GetParam().type);
    const auto tokens = random_tokens(40, 3);
    const auto resident = load(path, base_options(16));
    ASSERT_FALSE(resident->plan().streams());
    const auto expected_batched = evaluate(resident, tokens, false);
    const auto expected_single = evaluate(resident, tokens, true);
    ASSERT_TRUE(expected_batched && expected_single);
    const auto greedy = generate(resident, 1, 0.0f);
    const auto sampled = generate(resident, 7, 1.0f);
    ASSERT_EQ(greedy.tokens.size(), 16u) << greedy.error;
    const auto& hp = resident->hparams();
    const std::uint64_t total = std::uint64_t{hp.n_expert} * (hp.n_layer - hp.routing.leading_dense);
    // The smallest cache (two layers' worth of chosen experts), half a layer's experts per layer, and most
    // (a slot has room to align reads, so a budget for all of them would hold the whole model).
    for (const std::uint64_t slots : {std::uint64_t{2} * hp.n_expert_used, total / 2, total * 3 / 4}) {
        for (const bool prefetch : {true, false}) {
            SCOPED_TRACE("slots " + std::to_string(slots) + (prefetch ? " prefetch" : " no prefetch"));
            const auto m = load_streaming(path, slots, 16, prefetch);
            const auto batched = evaluate(m, tokens, false);
            ASSERT_TRUE(batched) << batched.error().message;
            EXPECT_EQ(*batched, *expected_batched);
            const auto single = evaluate(m, tokens, true);
            ASSERT_TRUE(single) << single.error().message;
            EXPECT_EQ(*single, *expected_single);
            EXPECT_EQ(generate(m, 1, 0.0f).tokens, greedy.tokens);
            EXPECT_EQ(generate(m, 7, 1.0f).tokens, sampled.tokens);
            const auto c = m->expert_counters();
            EXPECT_GT(c.bytes_read, 0u);
            EXPECT_EQ(c.read_failures, 0u);
            if (prefetch) {
                EXPECT_GT(c.prefetch_issued, 0u);
            } else {
                EXPECT_EQ(c.prefetch_issued, 0u);
            }
        }
    }
    // The other policies evict other experts, with the same output.
    for (const auto policy : {experts::cache_policy::lfu, experts::cache_policy::lru2,
                              experts::cache_policy::layer_quota, experts::cache_policy::pin_hot}) {
        SCOPED_TRACE(experts::to_string(policy));
        const auto other = load_streaming(path, std::uint64_t{2} * hp.n_expert_used + 1, 16, true, policy);
        EXPECT_EQ(*evaluate(other, tokens, false), *expected_batched);
        EXPECT_EQ(generate(other, 7, 1.0f).tokens, sampled.tokens);
        EXPECT_GT(other->expert_counters().evictions, 0u);
    }
}

TEST_P(every_moe_arch, prefetch_two_layers_ahead_keeps_the_output_and_counts_its_reads_apart) {
    const auto path = tiny_model(GetParam().arch, GetParam().type);
    const auto tokens = random_tokens(40, 3);
    const resident_reference ref(path, tokens);
    ASSERT_FALSE(ref.batched.empty() || ref.single.empty());
    const auto& hp = ref.resident->hparams();
    const std::uint64_t total = ref.routed_experts();
    for (const std::uint64_t slots : {std::uint64_t{2} * hp.n_expert_used, total / 2}) {
        SCOPED_TRACE("slots " + std::to_string(slots));
        for (const std::uint32_t depth : {1u, 2u}) {
            SCOPED_TRACE("depth " + std::to_string(depth));
            const auto m = load_streaming(path, slots, 16, true, experts::cache_policy::lru2, depth);
            ref.expect_same(m, tokens);
            const auto c = m->expert_counters();
            EXPECT_EQ(c.read_failures, 0u);
            EXPECT_GT(c.prefetch_issued, 0u);
            EXPECT_LE(c.prefetch_used + c.prefetch_wasted, c.prefetch_issued);
            if (depth == 1 || hp.n_layer - hp.routing.leading_dense < 3) {
                EXPECT_EQ(c.prefetch2_issued, 0u);
                continue;
            }
            // Depth 2 reads experts of its own, and counts them apart (a part of the totals). The smallest cache
            // (each layer's fetch and the next layer's prediction fill it) may have no room left for it.
            const bool room = slots > std::uint64_t{2} * hp.n_expert_used;
            if (room) {
                EXPECT_GT(c.prefetch2_issued, 0u);
                EXPECT_GT(c.prefetch2_used + c.prefetch2_wasted, 0u) << c.prefetch2_issued << " issued";
            }
            EXPECT_LE(c.prefetch2_issued, c.prefetch_issued);
            EXPECT_LE(c.prefetch2_used + c.prefetch2_wasted, c.prefetch2_issued);
            EXPECT_LE(c.prefetch2_used, c.prefetch_used);
            EXPECT_LE(c.prefetch2_wasted, c.prefetch_wasted);
        }
    }
}

// Priority read order (demand reads first, predictions held below a window, dropped unread when let go of) changes
// when experts arrive and which predictions are read, never what is computed: the output is the resident model's at
// depth 1 and 2, with a window of one read (most predictions held back) and the default.
TEST_P(every_moe_arch, priority_read_order_keeps_the_output_and_counts_what_it_held_and_dropped) {
    const auto path = tiny_model(GetParam().arch, GetParam().type);
    const auto tokens = random_tokens(40, 3);
    const resident_reference ref(path, tokens);
    ASSERT_FALSE(ref.batched.empty() || ref.single.empty());
    const auto& hp = ref.resident->hparams();
    const std::uint64_t total = ref.routed_experts();
    std::uint64_t deferred = 0;
    for (const std::uint64_t slots : {std::uint64_t{2} * hp.n_expert_used, total / 2}) {
        for (const std::uint32_t depth : {1u, 2u}) {
            for (const std::uint32_t window : {1u, experts::default_read_window}) {
                SCOPED_TRACE("slots " + std::to_string(slots) + " depth " + std::to_string(depth) + " window " +
                             std::to_string(window));
                const auto m = load_streaming(path, slots, 16, true, experts::cache_policy::lru2, depth,
                                              {experts::read_order::priority, window});
                ref.expect_same(m, tokens);
                const auto c = m->expert_counters();
                EXPECT_EQ(c.read_failures, 0u);
                EXPECT_GT(c.demand_reads, 0u);
                EXPECT_LE(c.prefetch_used + c.prefetch_wasted + c.prefetch_dropped, c.prefetch_issued);
                EXPECT_LE(c.prefetch2_dropped, c.prefetch_dropped);
                EXPECT_EQ(c.reads_dropped == 0, c.prefetch_dropped == 0); // an expert's reads go together
                deferred += c.reads_deferred;
            }
        }
    }
    // Whether a held prediction is still held when its layer comes depends on timing (expert_core_test drops
    // them deterministically); that a window of one holds some back does not: each expert is several reads.
    EXPECT_GT(deferred, 0u) << "a window of one read never held a prediction back";
}

/// Greedy tokens of `prompt` on `s`, `n` of them.
std::vector<std::int32_t> greedy(session& s, std::vector<std::int32_t> prompt, std::uint32_t n) {
    generate_request req;
    req.prompt_tokens = std::move(prompt);
    req.sampling.temperature = 0.0f;
    req.max_tokens = n;
    req.ignore_eos = true;
    auto g = drain(s, std::move(req));
    EXPECT_EQ(g.error, "");
    return g.tokens;
}

// A client that leaves while a step waits for its experts (the soak's WebSocket cancels found this): the stream
// ends as cancelled, not with "cancelled while reading experts" as an engine error, and the session does not keep
// what the interrupted step half did. A recurrent layer updates its state in place, so without going back to a
// checkpoint the next turn on the same session would continue from a state that saw part of a lost token.
TEST(streaming, cancel_during_an_expert_read_ends_cleanly_and_the_next_turn_is_exact) {
    const auto path = tiny_model("qwen35moe", quant_type::q8_0);
    const auto m = load_streaming(path, 4, 16);
    // A cancel only interrupts a wait in flight when it is emitted, so the delay after the first token sweeps
    // through a step's length; a trial whose cancel landed inside the step leaves the context at the prompt's end
    // (the interrupted token was not kept), one that landed between steps leaves it one token further. How much
    // of a step is spent waiting for reads depends on the host, so the sweep is repeated three times, each pass
    // shifted by a third of its spacing, until four trials were interrupted (one pass was not always enough on a
    // loaded 2-vCPU host).
    std::uint32_t interrupted = 0;
    for (std::uint32_t trial = 0; trial < 120 && interrupted < 4; ++trial) {
        session s(m);
        const auto prompt = random_tokens(12, 40 + trial % 4);
        boost::asio::io_context io;
        boost::asio::cancellation_signal signal;
        boost::asio::steady_timer timer(io);
        std::string failure;
        generation_summary summary;
        std::vector<std::int32_t> first;
        auto consume = [&]() -> boost::asio::awaitable<void> {
            generate_request req;
            req.prompt_tokens = prompt;
            req.sampling.temperature = 0.0f;
            req.max_tokens = 50;
            req.ignore_eos = true;
            auto stream = s.generate(std::move(req));
            while (true) {
                auto ev = co_await stream.next();
                if (!ev) {
                    failure = ev.error().message;
                    break;
                }
                if (!*ev) {
                    break;
                }
                if ((*ev)->token >= 0 && stream.tokens().size() == 1) {
                    timer.expires_after(std::chrono::microseconds(150 * (trial % 40) + 50 * (trial / 40)));
                    timer.async_wait([&](auto) { signal.emit(boost::asio::cancellation_type::terminal); });
                }
            }
            summary = stream.summary();
            first = stream.tokens();
        };
        boost::asio::co_spawn(io, consume(), boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::detached));
        io.run();
        EXPECT_EQ(failure, "") << "trial " << trial;
        EXPECT_EQ(summary.reason, finish_reason::cancelled) << "trial " << trial;
        ASSERT_GE(first.size(), 1u) << "trial " << trial;
        if (s.tokens_in_context() == prompt.size()) {
            ++interrupted;
        }

        // The next turn repeats the prompt and the tokens that were given, then asks for more.
        auto next = prompt;
        next.insert(next.end(), first.begin(), first.end());
        const auto more = random_tokens(5, 90 + trial);
        next.insert(next.end(), more.begin(), more.end());
        const auto after_cancel = greedy(s, next, 6);
        session fresh(m);
        EXPECT_EQ(after_cancel, greedy(fresh, next, 6)) << "trial " << trial;
    }
    EXPECT_GE(interrupted, 1u) << "no cancel landed inside a step: the test proved nothing";
}

TEST(streaming, cache_policy_names) {
    EXPECT_EQ(*experts::parse_cache_policy("lru"), experts::cache_policy::lru);
    EXPECT_EQ(*experts::parse_cache_policy("lfu"), experts::cache_policy::lfu);
    EXPECT_EQ(*experts::parse_cache_policy("lru-2"), experts::cache_policy::lru2);
    EXPECT_EQ(*experts::parse_cache_policy("layer-quota"), experts::cache_policy::layer_quota);
    EXPECT_EQ(*experts::parse_cache_policy("pin-hot"), experts::cache_policy::pin_hot);
    const auto bad = experts::parse_cache_policy("fifo");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("fifo"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    streaming, every_moe_arch,
    ::testing::Values(stream_case{"qwen3moe", quant_type::q4_k}, stream_case{"qwen3moe", quant_type::f32},
                      stream_case{"mixtral", quant_type::q8_0}, stream_case{"qwen2moe", quant_type::q8_0},
                      stream_case{"olmoe", quant_type::q5_k}, stream_case{"gpt-oss", quant_type::mxfp4},
                      stream_case{"gpt-oss", quant_type::q8_0}, stream_case{"qwen35moe", quant_type::q4_k},
                      stream_case{"qwen3next", quant_type::q8_0}, stream_case{"deepseek2", quant_type::q8_0},
                      stream_case{"glm4moe", quant_type::q8_0}),
    [](const auto& info) {
        auto name = info.param.arch + "_" + std::string(kernels::traits_of(info.param.type).name);
        std::replace(name.begin(), name.end(), '-', '_');
        return name;
    });

TEST(streaming, counters_move_when_streaming_and_stay_still_when_resident) {
    const auto path = tiny_model("qwen3moe", quant_type::q8_0);
    const auto tokens = random_tokens(24, 5);

    const auto resident = load(path, base_options(8));
    ASSERT_TRUE(evaluate(resident, tokens, false));
    ASSERT_EQ(generate(resident, 1, 0.0f).tokens.size(), 16u);
    const auto still = resident->expert_counters();
    EXPECT_EQ(still.reads, 0u);
    EXPECT_EQ(still.bytes_read, 0u);
    EXPECT_EQ(still.hits + still.misses + still.evictions, 0u);
    EXPECT_EQ(still.prefetch_issued, 0u);
    EXPECT_EQ(still.slots, 0u);
    EXPECT_EQ(still.tokens, 0u);

    const auto m = load_streaming(path, 6, 8);
    const auto before = m->expert_counters();
    EXPECT_EQ(before.reads, 0u);
    EXPECT_EQ(before.slots, 6u);
    ASSERT_TRUE(evaluate(m, tokens, false));
    const auto c = m->expert_counters();
    const auto& hp = m->hparams();
    EXPECT_GT(c.reads, 0u);
    EXPECT_EQ(c.reads % 3, 0u) << "three slabs per expert";
    EXPECT_GT(c.bytes_read, 0u);
    EXPECT_EQ(c.tokens, tokens.size());
    EXPECT_GT(c.misses, 0u);
    EXPECT_GT(c.evictions, 0u) << "6 slots for 16 experts must evict";
    EXPECT_GT(c.busy_s, 0.0);
    EXPECT_GT(c.read_bytes_per_s(), 0.0);
    EXPECT_GT(c.bytes_per_token(), 0.0);
    EXPECT_EQ(std::accumulate(c.latency_buckets.begin(), c.latency_buckets.end(), std::uint64_t{0}), c.reads);
    std::uint64_t hits = 0, misses = 0, evictions = 0;
    ASSERT_EQ(c.layers.size(), hp.n_layer);
    for (const auto& l : c.layers) {
        EXPECT_GT(l.hits + l.misses, 0u);
        hits += l.hits;
        misses += l.misses;
        evictions += l.evictions;
    }
    EXPECT_EQ(hits, c.hits);
    EXPECT_EQ(misses, c.misses);
    EXPECT_EQ(evictions, c.evictions);
    EXPECT_LE(c.slots_filled, c.slots);
    // Decoding moves them again, and predicts the next layer's experts (a batch of 8 tokens wants more
    // experts than the 6 slots hold, which leaves no room to read ahead; one token at a time does).
    ASSERT_EQ(generate(m, 1, 0.0f).tokens.size(), 16u);
    const auto after = m->expert_counters();
    EXPECT_GT(after.reads, c.reads);
    EXPECT_GT(after.tokens, c.tokens);
    EXPECT_GT(after.hits + after.misses, c.hits + c.misses);
    EXPECT_GT(after.prefetch_issued, 0u);
    EXPECT_GT(after.prefetch_used, 0u);
    EXPECT_LE(after.prefetch_used + after.prefetch_wasted, after.prefetch_issued);
}

TEST(streaming, a_budget_that_holds_the_model_streams_nothing) {
    const auto path = tiny_model("qwen3moe", quant_type::q8_0);
    auto o = base_options(8);
    o.memory_budget = std::uint64_t{1} << 34;
    const auto m = load(path, o);
    EXPECT_FALSE(m->plan().streams());
    EXPECT_EQ(m->plan().cache_slots, 0u);
    EXPECT_EQ(m->plan().read_bytes_per_token, 0u);
    ASSERT_TRUE(evaluate(m, random_tokens(8, 1), false));
    EXPECT_EQ(m->expert_counters().reads, 0u);
}

TEST(streaming, a_budget_below_the_minimum_is_an_error_with_the_numbers) {
    const auto path = tiny_model("qwen3moe", quant_type::q8_0);
    auto o = base_options(8);
    o.memory_budget = budget_for_slots(path, 0, o);
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("too small"), std::string::npos) << m.error().message;
    EXPECT_NE(m.error().message.find("dense weights"), std::string::npos) << m.error().message;
}

// Two forward passes at once on one cache that holds every expert: each expert is read once, however many
// passes want it at the same moment.
TEST(streaming, concurrent_passes_share_reads_in_flight) {
    const auto path = tiny_model("qwen3moe", quant_type::q8_0);
    const auto resident = load(path, base_options(8));
    auto files = gguf::model_files::open(path);
    ASSERT_TRUE(files);
    auto layout = experts::make_expert_layout(*files, resident->hparams());
    ASSERT_TRUE(layout);
    experts::expert_cache_options co;
    co.slots = layout->total_count;
    co.prefetch = false;
    auto cache = experts::expert_cache::create(*files, *layout, co);
    ASSERT_TRUE(cache);
    auto& m = *resident;
    models::forward_runner a(m.arch(), m.hparams(), m.weights(), m.pool(), **cache, 8);
    models::forward_runner b(m.arch(), m.hparams(), m.weights(), m.pool(), **cache, 8);
    const auto layout_of = models::cache_layout_of(m.arch(), m.hparams());
    models::kv_cache ca(layout_of, 64), cb(layout_of, 64);
    const auto tokens = random_tokens(16, 9);
    std::vector<float> la, lb;
    boost::asio::io_context io;
    int done = 0;
    auto run = [&](models::forward_runner& r, models::kv_cache& c, std::vector<float>& l) {
        boost::asio::co_spawn(io, r.forward(c, tokens, models::logits_mode::all, l),
                              [&](std::exception_ptr e, result<void> res) {
                                  ASSERT_FALSE(e);
                                  ASSERT_TRUE(res) << res.error().message;
                                  ++done;
                              });
    };
    run(a, ca, la);
    run(b, cb, lb);
    io.run();
    ASSERT_EQ(done, 2);
    EXPECT_EQ(la, lb);
    const auto c = (*cache)->counters();
    EXPECT_EQ(c.evictions, 0u);
    EXPECT_EQ(c.reads, 3 * c.slots_filled) << "an expert wanted by both passes was read twice";
    EXPECT_LE(c.slots_filled, layout->total_count);
}

// A read failure (the file shrank under the model) fails that request with a message naming the file; once
// the file is whole again the same model serves the next request, identical to the resident output.
TEST(streaming, a_truncated_file_fails_the_request_and_the_engine_recovers) {
    const auto source = tiny_model("qwen3moe", quant_type::q8_0);
    const auto path = test::scratch_dir() / "streaming-truncated.gguf";
    std::filesystem::copy_file(source, path, std::filesystem::copy_options::overwrite_existing);
    const auto size = std::filesystem::file_size(path);
    std::vector<char> original(size);
    {
        std::ifstream in(path, std::ios::binary);
        in.read(original.data(), static_cast<std::streamsize>(size));
    }
    const auto resident = load(source, base_options(8));
    const auto expected = generate(resident, 1, 0.0f);
    const auto m = load_streaming(path, 4, 8);
    std::filesystem::resize_file(path, size / 2);
    const auto failed = generate(m, 1, 0.0f);
    EXPECT_NE(failed.error.find(path.string()), std::string::npos) << failed.error;
    EXPECT_NE(failed.error.find("end of file"), std::string::npos) << failed.error;
    EXPECT_GT(m->expert_counters().read_failures, 0u);
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(original.data(), static_cast<std::streamsize>(size));
    }
    const auto again = generate(m, 1, 0.0f);
    EXPECT_EQ(again.error, "");
    EXPECT_EQ(again.tokens, expected.tokens);
}

} // namespace
} // namespace sluice
