// The plan under a routing recording, on hand-written recordings whose cache behaviour is known: a cycle that fits
// the cache hits after the cold start, one slot short of it misses every time under LRU, a cache larger than the
// recording is counted on a second pass, a resident plan reads nothing, and a recording of another geometry is
// refused naming both.
#include "runtime/engine/routing_plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

using experts::cache_policy;
using experts::routing_geometry;

/// A one-layer, 8-expert, top-1 recording whose tokens choose `experts` in order.
experts::routing_trace one_layer_trace(const std::vector<std::uint16_t>& chosen) {
    const routing_geometry g{1, 8, 1};
    auto bytes = experts::encode_routing_header({g, chosen.size(), "hand-written"});
    std::uint32_t pos = 0;
    for (const auto e : chosen) {
        const std::uint16_t ids[] = {e};
        const float weights[] = {1.0f};
        const std::uint16_t predicted[] = {experts::no_expert};
        experts::encode_routing_record(g, 0, pos++, ids, weights, predicted, predicted, bytes);
    }
    auto t = experts::routing_trace::parse(bytes, "test.routing");
    EXPECT_TRUE(t) << t.error().message;
    return std::move(*t);
}

/// A streaming plan of `slots` slots over 8 experts, 1 MiB read per expert, a 1 GB/s disk.
memory_plan streaming_plan(std::uint64_t slots) {
    memory_plan p;
    p.strategy = memory_plan::strategy_kind::stream_experts;
    p.cache_slots = slots;
    p.total_experts = 8;
    p.read_bytes_per_token_cold = 1 << 20;
    p.read_bytes_per_token_uniform = static_cast<std::uint64_t>((1 << 20) * (1.0 - static_cast<double>(slots) / 8));
    p.read_bytes_per_token = p.read_bytes_per_token_uniform;
    p.disk_bandwidth = 1e9;
    return p;
}

experts::expert_layout one_mib_experts() {
    experts::expert_layout l;
    l.read_bytes = 1 << 20;
    l.expert_used = 1;
    return l;
}

const std::vector<std::uint16_t> cycle_of_four = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};

TEST(estimate_routing, a_cycle_that_fits_the_cache_hits_after_the_cold_start) {
    const auto e = estimate_routing(streaming_plan(4), one_mib_experts(), one_layer_trace(cycle_of_four), {1, 8, 1},
                                    {cache_policy::lru}, {true}, "test.routing");
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ(e->tokens, 12u);
    EXPECT_EQ(e->warmup_tokens, 4u);
    EXPECT_EQ(e->measured_tokens, 8u);
    EXPECT_FALSE(e->second_pass);
    EXPECT_EQ(e->hits, 8u);
    EXPECT_EQ(e->misses, 0u);
    EXPECT_DOUBLE_EQ(e->hit_rate, 1.0);
    EXPECT_EQ(e->read_bytes_per_token, 0u);
    EXPECT_DOUBLE_EQ(e->tokens_per_s_bound, 0.0); // nothing read: no disk bound
    EXPECT_DOUBLE_EQ(e->uniform_hit_rate, 0.5);
}

TEST(estimate_routing, lru_one_slot_short_of_a_cycle_misses_every_time) {
    const auto e = estimate_routing(streaming_plan(3), one_mib_experts(), one_layer_trace(cycle_of_four), {1, 8, 1},
                                    {cache_policy::lru}, {true}, "test.routing");
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ(e->warmup_tokens, 3u);
    EXPECT_EQ(e->measured_tokens, 9u);
    EXPECT_EQ(e->hits, 0u);
    EXPECT_EQ(e->misses, 9u);
    EXPECT_EQ(e->read_bytes_per_token, 1u << 20);
    EXPECT_NEAR(e->tokens_per_s_bound, 1e9 / (1 << 20), 1e-9);
}

TEST(estimate_routing, both_policies_keep_an_expert_chosen_every_other_token) {
    // Expert 0 is chosen every other token, 1..3 in between: with 2 slots LRU keeps 0 (it is always the most
    // recent but one) and LFU keeps it (it is the most chosen), so every later choice of 0 hits.
    const std::vector<std::uint16_t> chosen = {0, 1, 0, 2, 0, 3, 0, 1, 0, 2, 0, 3, 0, 1, 0, 2};
    const auto lru = estimate_routing(streaming_plan(2), one_mib_experts(), one_layer_trace(chosen), {1, 8, 1},
                                      {cache_policy::lru}, {true}, "test.routing");
    const auto lfu = estimate_routing(streaming_plan(2), one_mib_experts(), one_layer_trace(chosen), {1, 8, 1},
                                      {cache_policy::lfu}, {true}, "test.routing");
    ASSERT_TRUE(lru && lfu);
    EXPECT_EQ(lru->hits, 7u); // every access of expert 0 after the warm-up
    EXPECT_EQ(lfu->policy.policy, cache_policy::lfu);
    EXPECT_GE(lfu->hits, 7u);
}

TEST(estimate_routing, a_cache_larger_than_the_recording_counts_a_second_pass) {
    const auto e = estimate_routing(streaming_plan(6), one_mib_experts(), one_layer_trace(cycle_of_four), {1, 8, 1},
                                    {cache_policy::lru}, {true}, "test.routing");
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_TRUE(e->second_pass);
    EXPECT_EQ(e->warmup_tokens, 12u);
    EXPECT_EQ(e->measured_tokens, 12u);
    EXPECT_EQ(e->misses, 0u);
}

/// A two-layer, 8-expert, top-1 recording: each token chooses `first[t]` at layer 0 and `second[t]` at layer 1,
/// and layer 0 predicts `second[t]` for layer 1 (a perfect prediction).
experts::routing_trace two_layer_trace(const std::vector<std::uint16_t>& first,
                                       const std::vector<std::uint16_t>& second) {
    const routing_geometry g{2, 8, 1};
    auto bytes = experts::encode_routing_header({g, first.size(), "predicted"});
    for (std::size_t t = 0; t < first.size(); ++t) {
        const std::uint16_t ids[] = {first[t], second[t]};
        const float weights[] = {1.0f, 1.0f};
        const std::uint16_t predicted[] = {second[t], experts::no_expert};
        const std::uint16_t predicted2[] = {experts::no_expert, experts::no_expert};
        experts::encode_routing_record(g, 0, static_cast<std::uint32_t>(t), ids, weights, predicted, predicted2, bytes);
    }
    auto t = experts::routing_trace::parse(bytes, "test.routing");
    EXPECT_TRUE(t) << t.error().message;
    return std::move(*t);
}

TEST(estimate_routing, a_right_prediction_read_ahead_turns_the_next_layers_miss_into_a_hit) {
    // Layer 1 cycles through 4 experts with 3 slots for both layers: a miss every time without prefetch; with
    // it, every layer-1 choice was read ahead by the prediction, so only layer 0's expert 0 is ever chosen cold.
    const std::vector<std::uint16_t> first(12, 0);
    const std::vector<std::uint16_t> second = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
    const auto trace = two_layer_trace(first, second);
    const auto demand = estimate_routing(streaming_plan(3), one_mib_experts(), trace, {2, 8, 1}, {cache_policy::lru},
                                         {false}, "test.routing");
    const auto ahead = estimate_routing(streaming_plan(3), one_mib_experts(), trace, {2, 8, 1}, {cache_policy::lru},
                                        {true}, "test.routing");
    ASSERT_TRUE(demand && ahead);
    EXPECT_EQ(demand->prefetch_reads, 0u);
    EXPECT_GT(demand->misses, 0u);
    EXPECT_EQ(ahead->misses, 0u);
    EXPECT_EQ(ahead->prefetch_reads, ahead->measured_tokens); // one layer-1 expert read ahead per token
    EXPECT_EQ(ahead->prefetch_used, ahead->prefetch_reads);
    EXPECT_EQ(ahead->prefetch_wasted, 0u);
    EXPECT_EQ(ahead->read_bytes_per_token, 1u << 20); // the read moved ahead, it did not go away
}

TEST(estimate_routing, streams_fetch_an_expert_they_share_once_per_step) {
    // Two streams over a cycle of four in one layer, 4 slots: stream 0 starts at record 0, stream 1 at record 6
    // (the same expert two places on), so each step chooses two distinct experts; all four fit, so after the cold
    // start every step hits both, and one step holds two tokens.
    const auto e = estimate_routing(streaming_plan(4), one_mib_experts(), one_layer_trace(cycle_of_four), {1, 8, 1},
                                    {cache_policy::lru}, {true}, "test.routing", {2, 0});
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ(e->streams, 2u);
    EXPECT_EQ(e->routed_layers, 1u);
    EXPECT_EQ(e->warmup_tokens, 4u); // two steps of two tokens
    EXPECT_EQ(e->measured_steps, 4u);
    EXPECT_EQ(e->measured_tokens, 8u);
    EXPECT_DOUBLE_EQ(e->distinct_per_step, 2.0);
    EXPECT_DOUBLE_EQ(e->misses_per_step, 0.0);
    // The same streams choosing the same expert at once: records 0 and 4 both choose 0.
    const std::vector<std::uint16_t> twice = {0, 1, 2, 3, 0, 1, 2, 3};
    const auto same = estimate_routing(streaming_plan(2), one_mib_experts(), one_layer_trace(twice), {1, 8, 1},
                                       {cache_policy::lru}, {true}, "test.routing", {2, 0});
    ASSERT_TRUE(same) << same.error().message;
    EXPECT_DOUBLE_EQ(same->distinct_per_step, 1.0);
    EXPECT_DOUBLE_EQ(same->misses_per_step, 1.0);          // 2 slots, a cycle of 4 one expert a step: LRU misses each
    EXPECT_EQ(same->read_bytes_per_token, (1u << 20) / 2); // one read serves both tokens
}

TEST(estimate_routing, the_step_prediction_keeps_the_most_predicted_experts) {
    // Three streams (records 0, 2 and 4 at step 0; 1, 3 and 5 at step 1) over two layers, 3 slots, each token
    // predicting its layer-1 expert. Step 0 fills the cache (layer 0's expert 0, layer 1's 4 and 5); step 1's tokens
    // choose 6, 6, 7 at layer 1: without a limit both are read ahead and hit; with a limit of 1 only 6 (two votes)
    // is, and 7 is a miss.
    const std::vector<std::uint16_t> first(6, 0);
    const std::vector<std::uint16_t> second = {4, 6, 4, 6, 5, 7};
    const auto trace = two_layer_trace(first, second);
    const auto all = estimate_routing(streaming_plan(3), one_mib_experts(), trace, {2, 8, 1}, {cache_policy::lru},
                                      {true}, "test.routing", {3, 0});
    const auto one = estimate_routing(streaming_plan(3), one_mib_experts(), trace, {2, 8, 1}, {cache_policy::lru},
                                      {true}, "test.routing", {3, 1});
    ASSERT_TRUE(all && one);
    EXPECT_EQ(all->measured_steps, 1u);
    EXPECT_DOUBLE_EQ(all->distinct_per_step, 3.0); // 0 at layer 0, 6 and 7 at layer 1
    EXPECT_EQ(all->prefetch_reads, 2u);
    EXPECT_EQ(all->misses, 0u);
    EXPECT_EQ(one->prefetch_reads, 1u);
    EXPECT_EQ(one->misses, 1u);
}

TEST(estimate_routing, a_resident_plan_reads_nothing) {
    memory_plan resident;
    const auto e = estimate_routing(resident, one_mib_experts(), one_layer_trace(cycle_of_four), {1, 8, 1},
                                    {cache_policy::lru}, {true}, "test.routing");
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_DOUBLE_EQ(e->hit_rate, 1.0);
    EXPECT_EQ(e->read_bytes_per_token, 0u);
}

TEST(estimate_routing, a_recording_of_another_geometry_is_refused_naming_both) {
    const auto e = estimate_routing(streaming_plan(4), one_mib_experts(), one_layer_trace(cycle_of_four), {2, 8, 2},
                                    {cache_policy::lru}, {true}, "test.routing");
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().message, "test.routing: recording of 1 layers x 8 experts, top-1 (model \"hand-written\") "
                                 "does not fit this model's 2 layers x 8 experts, top-2");
}

TEST(expected_tokens_per_s, adds_the_disk_time_to_the_compute_time) {
    EXPECT_DOUBLE_EQ(expected_tokens_per_s(10.0, 0, 0.0), 10.0);          // nothing read: the compute speed
    EXPECT_DOUBLE_EQ(expected_tokens_per_s(10.0, 100'000'000, 1e9), 5.0); // 0.1 s + 0.1 s per token
    EXPECT_DOUBLE_EQ(expected_tokens_per_s(0.0, 100'000'000, 1e9), 0.0);  // compute unknown
    EXPECT_DOUBLE_EQ(expected_tokens_per_s(10.0, 100'000'000, 0.0), 0.0); // disk unknown
}

TEST(estimate_routing, the_json_names_the_rates_and_the_bound) {
    const auto e = estimate_routing(streaming_plan(3), one_mib_experts(), one_layer_trace(cycle_of_four), {1, 8, 1},
                                    {cache_policy::lru}, {true}, "test.routing");
    ASSERT_TRUE(e);
    const auto o = to_json(*e);
    for (const char* key : {"policy", "tokens", "warmup_tokens", "measured_tokens", "demand_hit_rate",
                            "uniform_hit_rate", "read_bytes_per_token", "tokens_per_s_bound", "assumptions"}) {
        EXPECT_TRUE(o.contains(key)) << key;
    }
    EXPECT_EQ(o.at("policy").as_string(), "lru");
}

} // namespace
} // namespace sluice
