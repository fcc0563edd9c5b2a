// The expert core on its own: replacement policies on access traces (no model), and the expert cache's handles
// on a real generated file read through io_uring: hits ready at once, misses arriving on the io_context, reads
// shared between a fetch and a prediction, entries waiting for a slot when every slot is held, and read failures
// reported on the batch; and the priority read order: demand reads ahead of held predictions, predictions
// dropped unread with their slots reusable, a fetched prediction made a demand read.
#include "runtime/experts/expert_cache.hpp"
#include "runtime/experts/replacement_policy.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

namespace sluice {
namespace {

using experts::cache_policy;
using experts::entry_state;
using experts::expert_access;
using kernels::quant_type;

std::vector<expert_access> trace_of(std::initializer_list<int> experts) {
    std::vector<expert_access> t;
    for (const int e : experts) {
        t.push_back({0, e});
    }
    return t;
}

TEST(replacement_policy, lru_evicts_the_least_recently_used) {
    auto p = experts::make_policy(cache_policy::lru, 2, 1, 8);
    const auto t = trace_of({1, 2, 1, 3, 2, 1});
    const auto r = experts::simulate(*p, 2, 1, 8, t);
    // 1 2 miss; 1 hit; 3 evicts 2; 2 evicts 1; 1 evicts 3.
    EXPECT_EQ(r.hits, 1u);
    EXPECT_EQ(r.misses, 5u);
    ASSERT_EQ(r.victims.size(), 3u);
    EXPECT_EQ(r.victims[0].expert, 2);
    EXPECT_EQ(r.victims[1].expert, 1);
    EXPECT_EQ(r.victims[2].expert, 3);
}

TEST(replacement_policy, lfu_keeps_the_often_chosen_expert_that_lru_would_evict) {
    const auto t = trace_of({1, 1, 1, 2, 3, 1, 4, 1});
    auto lru = experts::make_policy(cache_policy::lru, 2, 1, 8);
    auto lfu = experts::make_policy(cache_policy::lfu, 2, 1, 8);
    const auto a = experts::simulate(*lru, 2, 1, 8, t);
    const auto b = experts::simulate(*lfu, 2, 1, 8, t);
    // LRU: 1 1 1 (2 hits) 2 3(evicts 1) 1(evicts 2) 4(evicts 3) 1 hit -> 3 hits. LFU keeps 1 throughout: 4 hits.
    EXPECT_EQ(a.hits, 3u);
    EXPECT_EQ(b.hits, 4u);
    for (const auto& v : b.victims) {
        EXPECT_NE(v.expert, 1) << "LFU evicted the expert chosen most often";
    }
}

TEST(replacement_policy, a_trace_that_fits_never_evicts) {
    auto p = experts::make_policy(cache_policy::lru, 4, 2, 4);
    std::vector<expert_access> t;
    for (int round = 0; round < 5; ++round) {
        t.push_back({0, 1});
        t.push_back({1, 3});
    }
    const auto r = experts::simulate(*p, 4, 2, 4, t);
    EXPECT_EQ(r.misses, 2u);
    EXPECT_EQ(r.hits, 8u);
    EXPECT_TRUE(r.victims.empty());
}

TEST(replacement_policy, lru2_keeps_the_expert_chosen_twice_over_a_newer_one_chosen_once) {
    const auto t = trace_of({1, 1, 2, 3, 1});
    auto lru = experts::make_policy(cache_policy::lru, 2, 1, 8);
    auto lru2 = experts::make_policy(cache_policy::lru2, 2, 1, 8);
    const auto a = experts::simulate(*lru, 2, 1, 8, t);
    const auto b = experts::simulate(*lru2, 2, 1, 8, t);
    // At 3, LRU evicts 1 (released before 2) and misses it again; LRU-2 evicts 2, chosen only once, and hits 1.
    ASSERT_EQ(a.victims.size(), 2u);
    EXPECT_EQ(a.victims[0].expert, 1);
    EXPECT_EQ(a.hits, 1u);
    ASSERT_EQ(b.victims.size(), 1u);
    EXPECT_EQ(b.victims[0].expert, 2);
    EXPECT_EQ(b.hits, 2u);
}

TEST(replacement_policy, lru2_forgets_old_frequency_that_lfu_keeps) {
    // 1 chosen five times long ago, 2 twice since: at 3, LFU keeps 1 (count 5 against 2) and evicts 2; LRU-2
    // evicts 1, whose second-to-last choice is older than 2's. The 2 that follows is a hit only for LRU-2.
    const auto t = trace_of({1, 1, 1, 1, 1, 2, 2, 3, 2});
    auto lfu = experts::make_policy(cache_policy::lfu, 2, 1, 8);
    auto lru2 = experts::make_policy(cache_policy::lru2, 2, 1, 8);
    const auto a = experts::simulate(*lfu, 2, 1, 8, t);
    const auto b = experts::simulate(*lru2, 2, 1, 8, t);
    ASSERT_EQ(a.victims.size(), 2u);
    EXPECT_EQ(a.victims[0].expert, 2);
    ASSERT_EQ(b.victims.size(), 1u);
    EXPECT_EQ(b.victims[0].expert, 1);
    EXPECT_EQ(a.hits, 5u);
    EXPECT_EQ(b.hits, 6u);
}

TEST(replacement_policy, lru2_cycle_keeps_most_of_a_pass_that_outgrows_the_cache) {
    // 4 layers, one expert each, chosen in layer order pass after pass, 3 slots: every expert was chosen in the last
    // pass, so LRU-2 evicts the one whose layer comes next and misses every choice; lru-2-cycle evicts the one whose
    // layer comes back last, as Belady's optimal policy does, and after the cold pass misses one choice in three
    // (the optimum for a cycle of four over three slots: (4 - 3) / (4 - 1)).
    std::vector<expert_access> t;
    for (int pass = 0; pass < 10; ++pass) {
        for (std::uint32_t l = 0; l < 4; ++l) {
            t.push_back({l, 5});
        }
    }
    auto lru2 = experts::make_policy(cache_policy::lru2, 3, 4, 8);
    auto cycle = experts::make_policy(cache_policy::lru2_cycle, 3, 4, 8);
    const auto a = experts::simulate(*lru2, 3, 4, 8, t);
    const auto b = experts::simulate(*cycle, 3, 4, 8, t);
    EXPECT_EQ(a.hits, 0u);
    EXPECT_EQ(b.misses, 4u + 36u / 3u); // the cold pass, then one choice in three
    EXPECT_EQ(b.hits, 40u - 16u);
}

TEST(replacement_policy, lru2_cycle_evicts_a_stale_expert_before_a_fresh_one) {
    // Layer 0 chooses 1 then 2 on later passes, layer 1 always 3; at the third pass's layer 0, expert 1 (not chosen
    // since the last visit of layer 0) goes before 3 (chosen in the last pass), which then hits at layer 1.
    const std::vector<expert_access> t = {{0, 1}, {1, 3}, {0, 2}, {1, 3}, {0, 4}, {1, 3}};
    auto cycle = experts::make_policy(cache_policy::lru2_cycle, 3, 2, 8);
    const auto r = experts::simulate(*cycle, 3, 2, 8, t);
    ASSERT_EQ(r.victims.size(), 1u);
    EXPECT_EQ(r.victims[0].layer, 0u);
    EXPECT_EQ(r.victims[0].expert, 1);
    EXPECT_EQ(r.hits, 2u);
}

TEST(replacement_policy, layer_quota_evicts_from_the_layer_over_its_share) {
    // 4 slots over 2 layers: 2 each. Layer 1's expert is the oldest, so LRU evicts it when layer 0 takes a fourth
    // slot; the quota evicts layer 0's oldest instead, and layer 1's expert is still there when it comes back.
    const std::vector<expert_access> t = {{1, 1}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 1}};
    auto lru = experts::make_policy(cache_policy::lru, 4, 2, 8);
    auto quota = experts::make_policy(cache_policy::layer_quota, 4, 2, 8);
    const auto a = experts::simulate(*lru, 4, 2, 8, t);
    const auto b = experts::simulate(*quota, 4, 2, 8, t);
    ASSERT_FALSE(a.victims.empty());
    EXPECT_EQ(a.victims[0].layer, 1u);
    EXPECT_EQ(a.hits, 0u);
    ASSERT_EQ(b.victims.size(), 1u);
    EXPECT_EQ(b.victims[0].layer, 0u);
    EXPECT_EQ(b.victims[0].expert, 1);
    EXPECT_EQ(b.hits, 1u);
}

TEST(replacement_policy, pin_hot_passes_over_the_hottest_experts) {
    // 4 slots, half pinned: after four choices (1 1 1 2) the hot set is {1, 2}. LRU evicts 1 and 2 for 5 and 6 and
    // misses them when they come back; pin-hot evicts 3 and 4 instead and hits them.
    const auto t = trace_of({1, 1, 1, 2, 2, 2, 3, 4, 5, 6, 1, 2});
    auto lru = experts::make_policy(cache_policy::lru, 4, 1, 8);
    auto pin = experts::make_policy(experts::policy_spec{cache_policy::pin_hot, 50}, 4, 1, 8);
    const auto a = experts::simulate(*lru, 4, 1, 8, t);
    const auto b = experts::simulate(*pin, 4, 1, 8, t);
    EXPECT_EQ(a.hits, 4u);
    EXPECT_EQ(b.hits, 6u);
    ASSERT_EQ(b.victims.size(), 2u);
    EXPECT_EQ(b.victims[0].expert, 3);
    EXPECT_EQ(b.victims[1].expert, 4);
}

TEST(replacement_policy, pin_hot_still_evicts_a_hot_expert_when_nothing_else_is_evictable) {
    // 2 slots, the hot set ({1}) is one of them: a pinned hot expert is never held back when it is all there is.
    auto p = experts::make_policy(experts::policy_spec{cache_policy::pin_hot, 50}, 2, 1, 8);
    p->on_access(0, 1);
    p->on_access(0, 1); // refresh after 2 choices: 1 is hot
    p->on_evictable(0, 0, 1, false);
    EXPECT_EQ(p->evict(), std::optional<std::uint32_t>(0));
    EXPECT_EQ(p->evict(), std::nullopt);
}

TEST(replacement_policy, every_policy_counts_every_access_and_never_evicts_a_trace_that_fits) {
    const experts::policy_spec specs[] = {{cache_policy::lru},         {cache_policy::lfu},
                                          {cache_policy::lru2},        {cache_policy::lru2_cycle},
                                          {cache_policy::layer_quota}, {cache_policy::pin_hot, 25}};
    // 3 layers x 16 experts, pseudo-random choices and predictions.
    std::vector<expert_access> t;
    std::uint32_t x = 12345;
    for (int i = 0; i < 3000; ++i) {
        x = x * 1103515245u + 12345u;
        t.push_back({(x >> 8) % 3, static_cast<std::int32_t>((x >> 16) % 16), (x >> 4) % 4 == 0});
    }
    const auto chosen =
        static_cast<std::uint64_t>(std::count_if(t.begin(), t.end(), [](const auto& a) { return !a.prefetch; }));
    for (const auto& spec : specs) {
        SCOPED_TRACE(experts::to_string(spec));
        auto p = experts::make_policy(spec, 10, 3, 16);
        const auto r = experts::simulate(*p, 10, 3, 16, t);
        EXPECT_EQ(r.hits + r.misses, chosen);
        EXPECT_GT(r.hits, 0u);
        EXPECT_LE(r.prefetch_used + r.prefetch_wasted, r.prefetch_reads);
        EXPECT_EQ(r.victims.size(), r.misses + r.prefetch_reads - 10); // every slot was filled, then each read evicts
        auto roomy = experts::make_policy(spec, 48, 3, 16);
        const auto all = experts::simulate(*roomy, 48, 3, 16, t);
        EXPECT_TRUE(all.victims.empty());
        EXPECT_EQ(all.misses + all.prefetch_reads, 48u); // each expert read once
    }
}

TEST(replacement_policy, names_and_parameters_round_trip_and_bad_ones_are_refused) {
    for (const auto p : {cache_policy::lru, cache_policy::lfu, cache_policy::lru2, cache_policy::lru2_cycle,
                         cache_policy::layer_quota, cache_policy::pin_hot}) {
        EXPECT_EQ(*experts::parse_cache_policy(experts::to_string(p)), p);
    }
    EXPECT_EQ(*experts::parse_policy_spec("pin-hot:25"), (experts::policy_spec{cache_policy::pin_hot, 25}));
    EXPECT_EQ(*experts::parse_policy_spec("pin-hot"), (experts::policy_spec{cache_policy::pin_hot, 50}));
    EXPECT_EQ(experts::to_string(experts::policy_spec{cache_policy::pin_hot, 25}), "pin-hot:25");
    EXPECT_EQ(experts::to_string(experts::policy_spec{cache_policy::lru2}), "lru-2");
    for (const char* bad : {"pin-hot:0", "pin-hot:100", "pin-hot:x", "pin-hot:", "lru:5", "arc"}) {
        const auto r = experts::parse_policy_spec(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    }
}

TEST(replacement_policy, unknown_names_are_refused_by_name) {
    EXPECT_EQ(*experts::parse_cache_policy("lfu"), cache_policy::lfu);
    const auto bad = experts::parse_cache_policy("fifo");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("fifo"), std::string::npos);
}

// A cache over the tiny qwen3moe file with `slots` slots, driven on one io_context.
struct cache_fixture {
    explicit cache_fixture(const std::filesystem::path& path, std::uint64_t slots,
                           experts::read_scheduler_options reads = {}) {
        auto f = gguf::model_files::open(path);
        if (!f) {
            throw std::runtime_error(f.error().message);
        }
        files.emplace(std::move(*f));
        const models::architecture* arch = nullptr;
        hp = *models::load_hparams(files->kv(), arch);
        auto layout = experts::make_expert_layout(*files, hp);
        experts::expert_cache_options o;
        o.slots = slots;
        o.reads = reads;
        cache = std::move(*experts::expert_cache::create(*files, *layout, o));
        cache->attach(io.get_executor());
    }
    ~cache_fixture() {
        if (cache) {
            cache->detach();
        }
    }

    // Runs the io_context until `done` holds (or it runs out of work).
    template <class Pred>
    void run_until(Pred done) {
        io.restart();
        while (!done() && io.run_one() > 0) {
        }
    }

    boost::asio::io_context io;
    std::optional<gguf::model_files> files;
    models::model_hparams hp;
    std::unique_ptr<experts::expert_cache> cache;
};

TEST(expert_cache, a_miss_arrives_on_the_io_context_and_the_next_fetch_hits) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 8);
    experts::expert_batch b;
    b.reserve(f.hp.n_expert);
    b.bind(f.io.get_executor());
    const std::vector<std::int32_t> ids{1, 5};
    f.cache->fetch(b, 0, ids);
    EXPECT_EQ(b.state(0), entry_state::waiting);
    EXPECT_EQ(b.state(1), entry_state::waiting);
    f.run_until([&] { return b.ready(0) && b.ready(1); });
    ASSERT_TRUE(b.ready(0) && b.ready(1));
    EXPECT_NE(b.part(0, experts::expert_part::gate), nullptr);
    EXPECT_NE(b.part(1, experts::expert_part::down), nullptr);
    f.cache->release_all(b);
    f.cache->fetch(b, 0, ids);
    EXPECT_TRUE(b.ready(0) && b.ready(1)) << "experts in memory must be ready at once";
    f.cache->release_all(b);
    const auto c = f.cache->counters();
    EXPECT_EQ(c.misses, 2u);
    EXPECT_EQ(c.hits, 2u);
    EXPECT_EQ(c.reads, 2u * 3u); // gate, up, down of each expert, read once
}

TEST(expert_cache, counts_as_missing_the_experts_neither_held_nor_being_read) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 8);
    experts::expert_batch fetch, prediction;
    for (auto* b : {&fetch, &prediction}) {
        b->reserve(f.hp.n_expert);
        b->bind(f.io.get_executor());
    }
    const std::vector<std::int32_t> asked{1, 5, 6, 7};
    EXPECT_EQ(f.cache->count_missing(0, asked), 4u);
    f.cache->fetch(fetch, 0, std::vector<std::int32_t>{1, 5});
    f.cache->prefetch(prediction, 0, std::vector<std::int32_t>{6});
    EXPECT_EQ(f.cache->count_missing(0, asked), 1u) << "reads in flight count as present";
    f.run_until([&] { return fetch.ready(0) && fetch.ready(1) && prediction.state(0) == entry_state::ready; });
    f.cache->release_all(fetch);
    f.cache->release_all(prediction);
    EXPECT_EQ(f.cache->count_missing(0, asked), 1u) << "released experts stay cached";
    EXPECT_EQ(f.cache->count_missing(1, asked), 4u) << "another layer's experts of the same ids";
}

// Speculation's draft prefetch asks for experts between passes, with no pass attached. The last pass's io_context
// may be gone by then (a test's, a finished request's), so the reads wait for the next attach instead of being posted
// to the executor the cache last saw.
TEST(expert_cache, a_prediction_asked_for_with_no_pass_attached_is_read_at_the_next_attach) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 8);
    f.cache->detach();
    {
        boost::asio::io_context gone; // the last pass ran on an io_context that no longer exists
        f.cache->attach(gone.get_executor());
        f.cache->detach();
    }
    experts::expert_batch prediction;
    prediction.reserve(f.hp.n_expert);
    prediction.bind(f.io.get_executor());
    f.cache->prefetch(prediction, 0, std::vector<std::int32_t>{3});
    f.io.restart();
    f.io.run_for(std::chrono::milliseconds(200));
    EXPECT_EQ(prediction.state(0), entry_state::waiting) << "submitted with no pass attached";
    f.cache->attach(f.io.get_executor());
    f.run_until([&] { return prediction.state(0) == entry_state::ready; });
    EXPECT_EQ(prediction.state(0), entry_state::ready);
    f.cache->release_all(prediction);
}

TEST(expert_cache, a_fetch_joins_the_read_of_a_prediction_in_flight) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 8);
    experts::expert_batch fetch, prediction;
    for (auto* b : {&fetch, &prediction}) {
        b->reserve(f.hp.n_expert);
        b->bind(f.io.get_executor());
    }
    const std::vector<std::int32_t> ids{2, 3};
    f.cache->prefetch(prediction, 1, ids);
    f.cache->fetch(fetch, 1, ids); // before the prediction's reads end
    f.cache->release_all(prediction);
    f.run_until([&] { return fetch.ready(0) && fetch.ready(1); });
    ASSERT_TRUE(fetch.ready(0) && fetch.ready(1));
    f.cache->release_all(fetch);
    const auto c = f.cache->counters();
    EXPECT_EQ(c.reads, 2u * 3u) << "an expert wanted by a prediction and a fetch was read twice";
    EXPECT_EQ(c.prefetch_issued, 2u);
    EXPECT_EQ(c.prefetch_used, 2u);
}

// Issue 22's streaming exit hang: `sluice run` under a small budget hung at exit about once in 400 runs, its one
// thread in epoll_wait. The model was destroyed while a prediction's reads were still with the kernel; the reader
// went with it, and the reads' work on the io_context was never released, so run() never returned. Destroying a
// cache with reads in flight must leave an io_context that runs out of work.
TEST(expert_cache, a_cache_destroyed_with_reads_in_flight_lets_its_io_context_run_out_of_work) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 8);
    experts::expert_batch prediction;
    prediction.reserve(f.hp.n_expert);
    prediction.bind(f.io.get_executor());
    const std::vector<std::int32_t> ids{0, 4, 6};
    f.cache->prefetch(prediction, 1, ids);
    ASSERT_EQ(f.io.poll_one(), 1u); // the posted submission: the reads are now with the kernel
    EXPECT_GT(f.cache->counters().prefetch_issued, 0u);
    f.cache->release_all(prediction);
    f.cache->detach();
    f.cache.reset(); // the reads' completions have not been reaped yet
    f.io.restart();
    const auto start = std::chrono::steady_clock::now();
    f.io.run_for(std::chrono::seconds(10));
    EXPECT_TRUE(f.io.stopped()) << "the io_context still has work after the cache went";
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(expert_cache, entries_wait_for_a_slot_when_every_slot_is_held) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 2);
    experts::expert_batch a, b;
    for (auto* x : {&a, &b}) {
        x->reserve(f.hp.n_expert);
        x->bind(f.io.get_executor());
    }
    const std::vector<std::int32_t> first{0, 1}, second{2};
    f.cache->fetch(a, 0, first);
    f.run_until([&] { return a.ready(0) && a.ready(1); });
    ASSERT_TRUE(a.ready(0) && a.ready(1));
    f.cache->fetch(b, 0, second); // both slots are held by a: b's expert waits for one
    f.run_until([] { return false; });
    EXPECT_EQ(b.state(0), entry_state::waiting);
    f.cache->release(a, 0); // frees a slot: b's expert takes it
    f.run_until([&] { return b.ready(0); });
    EXPECT_TRUE(b.ready(0));
    f.cache->release_all(a);
    f.cache->release_all(b);
    EXPECT_EQ(f.cache->counters().evictions, 1u);
}

// Fills a cache of two slots with experts 0 then 1 of layer 0 (released: 0 is the least recently used).
void fill_two_slots(cache_fixture& f, experts::expert_batch& b) {
    for (const std::int32_t e : {0, 1}) {
        f.cache->fetch(b, 0, std::span(&e, 1));
        f.run_until([&] { return b.ready(0); });
        ASSERT_TRUE(b.ready(0));
        f.cache->release_all(b);
    }
}

// A step of many sequences asks for more experts than a cache holds between its visits to a layer, so the least
// recently used slot often holds an expert that the same request asks for: a miss listed before it must not evict it.
TEST(expert_cache, a_fetch_never_evicts_an_expert_it_asked_for) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 2);
    experts::expert_batch b;
    b.reserve(f.hp.n_expert);
    b.bind(f.io.get_executor());
    fill_two_slots(f, b);
    const auto before = f.cache->counters();
    const std::vector<std::int32_t> ids{2, 0}; // 2 is missing; 0 is cached, in the least recently used slot
    f.cache->fetch(b, 0, ids);
    EXPECT_TRUE(b.ready(1)) << "the cached expert was evicted by the miss listed before it";
    f.run_until([&] { return b.ready(0) && b.ready(1); });
    ASSERT_TRUE(b.ready(0) && b.ready(1));
    f.cache->release_all(b);
    const auto c = f.cache->counters();
    EXPECT_EQ(c.hits - before.hits, 1u);
    EXPECT_EQ(c.misses - before.misses, 1u);
    EXPECT_EQ(c.evictions - before.evictions, 1u); // expert 1's slot
    EXPECT_EQ(c.reads - before.reads, 3u);         // expert 2's gate, up and down only
}

// A prediction that finds some of its experts cached keeps them: reading the others evicts other slots, and the
// layer's fetch then finds every predicted expert in memory.
TEST(expert_cache, a_prediction_keeps_the_predicted_experts_it_finds) {
    cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 2);
    experts::expert_batch b, prediction;
    for (auto* x : {&b, &prediction}) {
        x->reserve(f.hp.n_expert);
        x->bind(f.io.get_executor());
    }
    fill_two_slots(f, b);
    const auto before = f.cache->counters();
    const std::vector<std::int32_t> predicted{2, 0}; // 0 is cached, in the least recently used slot
    f.cache->prefetch(prediction, 0, predicted);
    f.run_until([&] { return prediction.ready(0) && prediction.ready(1); });
    f.cache->release_all(prediction);
    f.cache->fetch(b, 0, predicted);
    EXPECT_TRUE(b.ready(0) && b.ready(1));
    f.cache->release_all(b);
    const auto c = f.cache->counters();
    EXPECT_EQ(c.hits - before.hits, 2u);
    EXPECT_EQ(c.evictions - before.evictions, 1u) << "a predicted expert was evicted by the prediction itself";
    EXPECT_EQ(c.reads - before.reads, 3u); // expert 2's gate, up and down only
}

TEST(expert_cache, a_failed_read_fails_the_batch_with_the_reason_and_the_next_fetch_reads_again) {
    const auto source = test::tiny_model("qwen3moe", quant_type::q8_0);
    const auto path = test::scratch_dir() / "expert-core-truncated.gguf";
    std::filesystem::copy_file(source, path, std::filesystem::copy_options::overwrite_existing);
    const auto size = std::filesystem::file_size(path);
    cache_fixture f(path, 8);
    std::filesystem::resize_file(path, size / 2);
    experts::expert_batch b;
    b.reserve(f.hp.n_expert);
    b.bind(f.io.get_executor());
    const std::int32_t last = static_cast<std::int32_t>(f.hp.n_expert) - 1;
    const std::vector<std::int32_t> ids{last};
    const auto last_layer = f.hp.n_layer - 1; // its experts lie past the middle of the file
    f.cache->fetch(b, last_layer, ids);
    f.run_until([&] { return b.state(0) == entry_state::failed; });
    ASSERT_EQ(b.state(0), entry_state::failed);
    ASSERT_TRUE(b.failure());
    EXPECT_NE(b.failure()->message.find("end of file"), std::string::npos) << b.failure()->message;
    f.cache->release_all(b);
    EXPECT_EQ(f.cache->count_missing(last_layer, ids), 1u) << "a failed read holds nothing";
    std::filesystem::copy_file(source, path, std::filesystem::copy_options::overwrite_existing);
    f.cache->fetch(b, last_layer, ids);
    f.run_until([&] { return b.state(0) != entry_state::waiting; });
    EXPECT_TRUE(b.ready(0));
    f.cache->release_all(b);
    EXPECT_GT(f.cache->counters().read_failures, 0u);
}

// Priority order, a window of one read: `n` predicted experts of layer 1 are asked for and the first of their
// reads submitted (the rest held), then a demand miss of layer 0. Returns nothing; the batches are bound.
struct priority_fixture : cache_fixture {
    priority_fixture(std::uint64_t slots, std::uint32_t window)
        : cache_fixture(test::tiny_model("qwen3moe", quant_type::q8_0), slots,
                        {experts::read_order::priority, window}) {
        for (auto* b : {&fetch, &prediction}) {
            b->reserve(hp.n_expert);
            b->bind(io.get_executor());
        }
    }
    // Asks for the prediction and runs the posted submission: one read with the kernel, the others held.
    void predict(std::span<const std::int32_t> ids) {
        cache->prefetch(prediction, 1, ids);
        ASSERT_EQ(io.poll_one(), 1u);
    }
    [[nodiscard]] std::size_t predictions_ready() const {
        std::size_t n = 0;
        for (std::size_t i = 0; i < prediction.size(); ++i) {
            n += prediction.state(i) == entry_state::ready ? 1 : 0;
        }
        return n;
    }
    experts::expert_batch fetch, prediction;
};

TEST(expert_cache, priority_order_serves_a_demand_read_queued_after_predictions_first) {
    priority_fixture f(16, 1);
    const std::vector<std::int32_t> predicted{0, 1, 2, 3, 4, 5};
    f.predict(predicted);
    const auto held = f.cache->counters();
    EXPECT_EQ(held.reads_deferred, predicted.size() * 3 - 1) << "the window of one read let more than one through";
    const std::vector<std::int32_t> chosen{7};
    f.cache->fetch(f.fetch, 0, chosen); // layer 0's miss, asked for after six experts' reads
    f.run_until([&] { return f.fetch.ready(0); });
    ASSERT_TRUE(f.fetch.ready(0));
    // Only the one prediction read already with the kernel may have ended: the demand read went next.
    EXPECT_EQ(f.predictions_ready(), 0u) << "a predicted expert was read before the demand miss asked for after it";
    const auto c = f.cache->counters();
    EXPECT_EQ(c.demand_reads, 3u);
    EXPECT_LE(c.reads, 1u + 3u) << "held predictions were read before the demand miss";
    f.cache->release_all(f.fetch);
    f.run_until([&] { return f.predictions_ready() == predicted.size(); });
    EXPECT_EQ(f.predictions_ready(), predicted.size()) << "held predictions were never read";
    f.cache->release_all(f.prediction);
    EXPECT_EQ(f.cache->counters().reads, (predicted.size() + 1) * 3);
}

// Six predicted experts and then a demand miss asked for before one submission: FIFO hands the kernel the eighteen
// prediction reads first, priority the three demand reads first and holds the predictions (a window of one).
TEST(expert_cache, fifo_puts_a_demand_miss_behind_earlier_predictions_and_priority_ahead_of_them) {
    for (const auto order : {experts::read_order::fifo, experts::read_order::priority}) {
        SCOPED_TRACE(std::string(experts::to_string(order)));
        cache_fixture f(test::tiny_model("qwen3moe", quant_type::q8_0), 16, {order, 1});
        experts::expert_batch fetch, prediction;
        for (auto* b : {&fetch, &prediction}) {
            b->reserve(f.hp.n_expert);
            b->bind(f.io.get_executor());
        }
        const std::vector<std::int32_t> predicted{0, 1, 2, 3, 4, 5}, chosen{7};
        f.cache->prefetch(prediction, 1, predicted);
        f.cache->fetch(fetch, 0, chosen);
        ASSERT_EQ(f.io.poll_one(), 1u); // one submission for all 21 reads
        auto c = f.cache->counters();
        if (order == experts::read_order::fifo) {
            EXPECT_EQ(c.demand_queued_behind, 18u + 19u + 20u);
            EXPECT_EQ(c.reads_deferred, 0u);
        } else {
            EXPECT_EQ(c.demand_queued_behind, 0u + 1u + 2u);
            EXPECT_EQ(c.reads_deferred, 18u);
        }
        f.run_until([&] { return fetch.ready(0); });
        ASSERT_TRUE(fetch.ready(0));
        f.cache->release_all(fetch);
        f.run_until([&] {
            for (std::size_t i = 0; i < predicted.size(); ++i) {
                if (!prediction.ready(i)) {
                    return false;
                }
            }
            return true;
        });
        f.cache->release_all(prediction);
        c = f.cache->counters();
        EXPECT_EQ(c.demand_reads, 3u);
        EXPECT_EQ(c.prefetch_dropped, 0u); // every prediction was read before it was let go of
        EXPECT_EQ(c.reads, (predicted.size() + 1) * 3);
    }
}

TEST(expert_cache, priority_order_drops_predictions_let_go_of_unread_and_their_slots_are_reused) {
    priority_fixture f(4, 1);
    const std::vector<std::int32_t> predicted{0, 1, 2, 3}; // every slot
    f.predict(predicted);
    f.cache->retire(f.prediction); // layer 1 came: the held predictions go unread
    auto c = f.cache->counters();
    EXPECT_EQ(c.prefetch_issued, 4u);
    EXPECT_EQ(c.prefetch_dropped, 3u) << "expert 0 has a read with the kernel; the three others had none";
    EXPECT_EQ(c.reads_dropped, 3u * 3u);
    // Expert 0's other two parts are still read (its read started), the dropped ones never.
    f.run_until([] { return false; });
    c = f.cache->counters();
    EXPECT_EQ(c.reads, 3u);
    EXPECT_EQ(c.slots_filled, 1u);
    // The three emptied slots take a fetch of three other experts at once: no eviction, no wait for a slot.
    const std::vector<std::int32_t> chosen{5, 6, 7};
    f.cache->fetch(f.fetch, 0, chosen);
    for (std::uint32_t i = 0; i < chosen.size(); ++i) {
        EXPECT_EQ(f.fetch.state(i), entry_state::waiting);
    }
    f.run_until([&] { return f.fetch.ready(0) && f.fetch.ready(1) && f.fetch.ready(2); });
    ASSERT_TRUE(f.fetch.ready(0) && f.fetch.ready(1) && f.fetch.ready(2));
    f.cache->release_all(f.fetch);
    // A dropped expert is read again when chosen; the one whose read had started is a hit.
    const std::vector<std::int32_t> again{0, 2};
    f.cache->fetch(f.fetch, 1, again);
    EXPECT_TRUE(f.fetch.ready(0)) << "the prediction read before it was let go of is not in memory";
    EXPECT_EQ(f.fetch.state(1), entry_state::waiting);
    f.run_until([&] { return f.fetch.ready(1); });
    ASSERT_TRUE(f.fetch.ready(1));
    f.cache->release_all(f.fetch);
    c = f.cache->counters();
    EXPECT_EQ(c.evictions, 1u); // expert 2's read took one slot: 0, 5, 6, 7 filled all four
    EXPECT_EQ(c.read_failures, 0u);
    EXPECT_EQ(c.reads, 3u * (1u + 3u + 1u));
}

// Speculation's draft prefetch hands its batch back at once and wants the reads to go on: only retire drops.
TEST(expert_cache, priority_order_keeps_reading_a_prediction_released_rather_than_retired) {
    priority_fixture f(16, 1);
    const std::vector<std::int32_t> predicted{0, 1, 2, 3};
    f.predict(predicted);
    f.cache->release_all(f.prediction);
    f.run_until([] { return false; });
    const auto c = f.cache->counters();
    EXPECT_EQ(c.prefetch_dropped, 0u);
    EXPECT_EQ(c.reads, predicted.size() * 3) << "a released prediction's held reads were not read";
    f.cache->fetch(f.fetch, 1, predicted);
    for (std::uint32_t i = 0; i < predicted.size(); ++i) {
        EXPECT_TRUE(f.fetch.ready(i));
    }
    f.cache->release_all(f.fetch);
}

TEST(expert_cache, priority_order_makes_a_fetched_prediction_a_demand_read) {
    priority_fixture f(16, 1);
    const std::vector<std::int32_t> predicted{0, 1, 2, 3, 4, 5};
    f.predict(predicted);
    const std::vector<std::int32_t> chosen{5}; // the last predicted: its reads are held behind five others
    f.cache->fetch(f.fetch, 1, chosen);
    EXPECT_EQ(f.cache->counters().prefetch_promoted, 1u);
    f.run_until([&] { return f.fetch.ready(0); });
    ASSERT_TRUE(f.fetch.ready(0));
    EXPECT_LE(f.predictions_ready(), 1u) << "the chosen expert's reads waited behind the other predictions'";
    EXPECT_EQ(f.cache->counters().demand_reads, 3u);
    f.cache->release_all(f.fetch);
    f.cache->retire(f.prediction); // the four never started are dropped; 0's read runs out
    f.run_until([] { return false; });
    const auto c = f.cache->counters();
    EXPECT_EQ(c.prefetch_used, 1u);
    EXPECT_EQ(c.prefetch_dropped, 4u);
    EXPECT_EQ(c.reads, 3u * 2u);
}

TEST(expert_cache, read_order_names_round_trip_and_bad_ones_are_refused) {
    for (const auto o : {experts::read_order::fifo, experts::read_order::priority}) {
        EXPECT_EQ(*experts::parse_read_order(experts::to_string(o)), o);
    }
    const auto bad = experts::parse_read_order("lifo");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("lifo"), std::string::npos);
}

} // namespace
} // namespace sluice
