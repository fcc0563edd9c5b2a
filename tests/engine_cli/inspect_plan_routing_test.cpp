// `sluice inspect --plan --routing REC` as a process: a recording made by `sluice run --record-routing` is replayed
// through the planned cache, giving a demand hit rate, bytes per token and a bound next to the plan's uniform
// estimate; a bigger cache never hits less under LRU; header-only files plan the same; a recording of another
// geometry is refused naming both.
#include "tiny_model.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <string>

namespace json = boost::json;
using sluice::test::process_result;
using sluice::test::run_process;
using sluice::test::scratch_dir;
using sluice::test::shell_quote;
using sluice::test::sluice_exe;
using sluice::test::tiny_moe_model;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// A recording of `model` generating 24 tokens (sampled, so the routing varies), made once per model.
std::string record(const std::filesystem::path& model, const std::string& name) {
    const auto rec = (scratch_dir() / name).string();
    const auto r = run_process(
        sluice_exe() + " run -m " + shell_quote(model.string()) +
        " -p 'the plan tells the truth' -n 24 --ignore-eos --temp 1 --seed 3 -t 1 -c 128 --record-routing " +
        shell_quote(rec));
    EXPECT_EQ(r.status, 0) << r.err;
    return rec;
}

const std::string& tiny_recording() {
    static const std::string rec = record(tiny_moe_model(), "tiny.routing");
    return rec;
}

process_result inspect_plan(const std::string& flags) {
    return run_process(sluice_exe() + " inspect --plan --threads 2 --ctx 256 --disk-bandwidth 1 " +
                       shell_quote(tiny_moe_model().string()) + " " + flags);
}

json::object plan_json(const std::string& flags) {
    const auto r = inspect_plan(flags);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out).as_object() : json::object{};
}

std::uint64_t u64(const json::object& o, const char* key) {
    return o.at(key).to_number<std::uint64_t>();
}
double num(const json::object& o, const char* key) {
    return o.at(key).to_number<double>();
}

/// A budget of the plan's fixed part (dense, KV, buffers) plus `slots` expert-cache slots.
std::string budget_with_slots(std::uint64_t slots) {
    const auto o = plan_json("--memory-budget 8GiB");
    return std::to_string(u64(o, "dense_bytes") + u64(o, "kv_bytes") + u64(o, "compute_bytes") +
                          slots * u64(o, "slot_bytes"));
}

} // namespace

TEST(sluice_inspect_plan_routing, a_recording_gives_the_hit_rate_bytes_and_bound_under_it) {
    const auto o = plan_json("--memory-budget " + budget_with_slots(6) + " --no-prefetch --routing " +
                             shell_quote(tiny_recording()));
    ASSERT_EQ(o.at("strategy").as_string(), "stream_experts");
    ASSERT_TRUE(o.contains("routing")) << json::serialize(o);
    const auto& r = o.at("routing").as_object();
    EXPECT_EQ(r.at("recording").as_string(), tiny_recording());
    EXPECT_EQ(r.at("policy").as_string(), "lru-2"); // the runtime's default
    EXPECT_FALSE(r.at("prefetch").as_bool());
    EXPECT_EQ(u64(r, "prefetch_reads"), 0u);
    EXPECT_GE(u64(r, "tokens"), 24u); // the prompt's tokens and the generated ones
    EXPECT_EQ(u64(r, "measured_tokens") + u64(r, "warmup_tokens"),
              u64(r, "tokens") * (r.at("second_pass").as_bool() ? 2 : 1));
    const double hit = num(r, "demand_hit_rate");
    EXPECT_GE(hit, 0.0);
    EXPECT_LE(hit, 1.0);
    // Demand misses times one expert's read bytes per token: below the cold traffic; the bound follows from it.
    const auto bytes = u64(r, "read_bytes_per_token");
    EXPECT_GT(bytes, 0u); // 6 slots for 2 layers of 8 experts cannot hold a sampled workload
    EXPECT_LE(bytes, u64(o, "read_bytes_per_token_cold"));
    EXPECT_NEAR(num(r, "tokens_per_s_bound"), 1e9 / static_cast<double>(bytes), 1e-6);
    EXPECT_NEAR(num(r, "uniform_hit_rate"),
                1.0 - static_cast<double>(u64(o, "read_bytes_per_token_uniform")) / u64(o, "read_bytes_per_token_cold"),
                1e-9);
    // The plan's own estimate (learned routing by default) stays next to it.
    EXPECT_GT(num(o, "tokens_per_s_bound"), 0.0);
}

TEST(sluice_inspect_plan_routing, prefetch_reads_the_recorded_predictions_ahead_by_default) {
    const auto flags = "--memory-budget " + budget_with_slots(6) + " --routing " + shell_quote(tiny_recording());
    const auto ahead = plan_json(flags).at("routing").as_object();
    const auto demand = plan_json(flags + " --no-prefetch").at("routing").as_object();
    EXPECT_TRUE(ahead.at("prefetch").as_bool());
    EXPECT_GT(u64(ahead, "prefetch_reads"), 0u);
    EXPECT_LE(u64(ahead, "prefetch_used") + u64(ahead, "prefetch_wasted"), u64(ahead, "prefetch_reads") + 6);
    // On this (seeded) recording the reads ahead turn misses into hits (64 against 91 when written).
    EXPECT_LE(u64(ahead, "misses"), u64(demand, "misses"));
    EXPECT_GE(num(ahead, "demand_hit_rate"), num(demand, "demand_hit_rate"));
}

TEST(sluice_inspect_plan_routing, a_compute_speed_adds_an_estimate_below_both_limits) {
    const auto o = plan_json("--memory-budget " + budget_with_slots(6) + " --compute-tokens-per-s 50 --routing " +
                             shell_quote(tiny_recording()));
    EXPECT_EQ(num(o, "compute_tokens_per_s"), 50.0);
    const auto& r = o.at("routing").as_object();
    for (const auto* part : {&o, &r}) {
        const double estimate = num(*part, "tokens_per_s_estimate");
        EXPECT_GT(estimate, 0.0);
        EXPECT_LT(estimate, 50.0);
        EXPECT_LT(estimate, num(*part, "tokens_per_s_bound"));
        const double disk_s = static_cast<double>(u64(*part, "read_bytes_per_token")) / 1e9;
        EXPECT_NEAR(estimate, 1.0 / (1.0 / 50.0 + disk_s), 1e-9);
    }
    for (const char* bad : {"-3", "0", "nan", "inf", "fast"}) {
        const auto r = inspect_plan(std::string("--compute-tokens-per-s ") + bad);
        EXPECT_NE(r.status, 0) << bad;
        EXPECT_NE(r.err.find("must be a positive number of tokens/s"), std::string::npos) << bad << ": " << r.err;
    }
}

TEST(sluice_inspect_plan_routing, a_bigger_lru_cache_never_hits_less) {
    double last = -1;
    for (const std::uint64_t slots : {4, 6, 10, 14}) {
        SCOPED_TRACE(slots);
        const auto o = plan_json("--memory-budget " + budget_with_slots(slots) +
                                 " --policy lru --no-prefetch --routing " + shell_quote(tiny_recording()));
        ASSERT_TRUE(o.contains("routing"));
        const double hit = num(o.at("routing").as_object(), "demand_hit_rate");
        EXPECT_GE(hit, last);
        last = hit;
    }
    const auto all = plan_json("--memory-budget 8GiB --routing " + shell_quote(tiny_recording()));
    EXPECT_EQ(num(all.at("routing").as_object(), "demand_hit_rate"), 1.0); // resident: nothing read
    EXPECT_EQ(u64(all.at("routing").as_object(), "read_bytes_per_token"), 0u);
}

TEST(sluice_inspect_plan_routing, lfu_is_a_choice_and_a_bad_policy_is_refused) {
    const auto budget = budget_with_slots(6);
    const auto o = plan_json("--memory-budget " + budget + " --policy lfu --routing " + shell_quote(tiny_recording()));
    EXPECT_EQ(o.at("routing").at("policy").as_string(), "lfu");
    const auto bad =
        inspect_plan("--memory-budget " + budget + " --policy mru --routing " + shell_quote(tiny_recording()));
    EXPECT_NE(bad.status, 0);
    EXPECT_TRUE(contains(bad.err, "--policy")) << bad.err;
    const auto no_routing = inspect_plan("--policy lfu");
    EXPECT_NE(no_routing.status, 0);
    EXPECT_TRUE(contains(no_routing.err, "--routing")) << no_routing.err;
}

TEST(sluice_inspect_plan_routing, every_policy_and_a_narrower_prefetch_are_choices) {
    const auto budget = budget_with_slots(6);
    const auto rec = shell_quote(tiny_recording());
    const auto lru =
        plan_json("--memory-budget " + budget + " --policy lru --routing " + rec).at("routing").as_object();
    for (const std::string policy : {"lru-2", "layer-quota", "pin-hot:25"}) {
        const auto o = plan_json("--memory-budget " + budget + " --policy " + policy + " --routing " + rec);
        const auto& r = o.at("routing").as_object();
        EXPECT_EQ(r.at("policy").as_string(), policy);
        // The same choices replayed: only how many of them hit differs.
        EXPECT_EQ(u64(r, "hits") + u64(r, "misses"), u64(lru, "hits") + u64(lru, "misses")) << policy;
    }
    const auto narrow = plan_json("--memory-budget " + budget + " --policy lru --prefetch-width 1 --routing " + rec)
                            .at("routing")
                            .as_object();
    EXPECT_EQ(u64(narrow, "prefetch_width"), 1u);
    EXPECT_LT(u64(narrow, "prefetch_reads"), u64(lru, "prefetch_reads")); // one of top-k predicted experts per layer
    EXPECT_EQ(u64(lru, "miss_bytes_per_token") > 0, u64(lru, "misses") > 0);
    const auto bad = inspect_plan("--memory-budget " + budget + " --policy pin-hot:0 --routing " + rec);
    EXPECT_NE(bad.status, 0);
    EXPECT_TRUE(contains(bad.err, "pin-hot:0")) << bad.err;
}

TEST(sluice_inspect_plan_routing, a_recording_of_another_geometry_is_refused_naming_both) {
    const auto bundled = std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf";
    const auto rec = record(bundled, "bundled.routing");
    const auto r = inspect_plan("--memory-budget " + budget_with_slots(6) + " --routing " + shell_quote(rec));
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_TRUE(contains(r.err, rec + ": recording of 8 layers x 16 experts, top-4")) << r.err;
    EXPECT_TRUE(contains(r.err, "does not fit this model's 2 layers x 8 experts, top-2")) << r.err;
}

TEST(sluice_inspect_plan_routing, a_missing_or_garbage_recording_ends_with_a_message) {
    const auto missing = inspect_plan("--routing " + shell_quote((scratch_dir() / "absent.routing").string()));
    EXPECT_EQ(missing.status, 1);
    EXPECT_TRUE(contains(missing.err, "absent.routing")) << missing.err;
}

TEST(sluice_inspect_plan_routing, streams_replay_steps_whose_union_is_at_most_their_choices) {
    // One stream's step chooses exactly routed_layers x top_k experts; four streams' steps choose between that (all
    // alike) and four times that, fewer whenever two of the step's tokens share an expert.
    const auto budget = budget_with_slots(6);
    const auto rec = shell_quote(tiny_recording());
    const auto one = plan_json("--memory-budget " + budget + " --routing " + rec).at("routing").as_object();
    const auto per_token = static_cast<double>(u64(one, "routed_layers") * u64(one, "top_k"));
    EXPECT_EQ(u64(one, "streams"), 1u);
    EXPECT_GT(per_token, 0.0);
    EXPECT_EQ(num(one, "distinct_per_step"), per_token);
    const auto four = plan_json("--memory-budget " + budget + " --policy lru-2-cycle --streams 4 --routing " + rec)
                          .at("routing")
                          .as_object();
    EXPECT_EQ(u64(four, "streams"), 4u);
    EXPECT_EQ(four.at("policy").as_string(), "lru-2-cycle");
    EXPECT_EQ(u64(four, "measured_tokens"), 4 * u64(four, "measured_steps"));
    EXPECT_GE(num(four, "distinct_per_step"), per_token);
    EXPECT_LE(num(four, "distinct_per_step"), 4 * per_token);
    EXPECT_NEAR(num(four, "misses_per_step") * static_cast<double>(u64(four, "measured_steps")),
                static_cast<double>(u64(four, "misses")), 1e-6);
    const auto bad = inspect_plan("--memory-budget " + budget + " --streams 0 --routing " + rec);
    EXPECT_NE(bad.status, 0);
    EXPECT_TRUE(contains(bad.err, "--streams")) << bad.err;
}
