// Runs `sluice inspect --plan` as a process on a tiny random MoE model: the plan is JSON whose strategy follows
// the budget, the disk bound comes from a flag or the probe, and bad budgets fail with a message (also on
// `run`, `bench` and `serve`, which check the flag before loading anything).
#include "tiny_model.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <string>

namespace json = boost::json;
using sluice::test::process_result;
using sluice::test::run_process;
using sluice::test::shell_quote;
using sluice::test::sluice_exe;
using sluice::test::tiny_moe_model;

namespace {

process_result inspect_plan(const std::string& flags) {
    return run_process(sluice_exe() + " inspect --plan --threads 2 " + shell_quote(tiny_moe_model().string()) + " " +
                       flags);
}

json::object plan_json(const std::string& flags) {
    const auto r = inspect_plan(flags);
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out).as_object();
}

std::uint64_t u64(const json::object& o, const char* key) {
    return o.at(key).to_number<std::uint64_t>();
}

/// A budget of the plan's fixed part (dense, KV, buffers) plus `slots` expert-cache slots.
std::string budget_with_slots(const json::object& resident, std::uint64_t slots) {
    return std::to_string(u64(resident, "dense_bytes") + u64(resident, "kv_bytes") + u64(resident, "compute_bytes") +
                          slots * u64(resident, "slot_bytes"));
}

} // namespace

TEST(sluice_inspect_plan, a_large_budget_keeps_everything_resident) {
    const auto o = plan_json("--memory-budget 8GiB --ctx 256");
    EXPECT_EQ(o.at("strategy").as_string(), "resident");
    EXPECT_EQ(u64(o, "budget_bytes"), 8ull << 30);
    EXPECT_EQ(u64(o, "cache_bytes"), 0u);
    EXPECT_EQ(u64(o, "read_bytes_per_token"), 0u);
    EXPECT_EQ(u64(o, "n_ctx"), 256u);
    EXPECT_EQ(u64(o, "n_seq"), 1u);
    EXPECT_GT(u64(o, "expert_bytes"), 0u);
    EXPECT_EQ(u64(o, "resident_bytes"), u64(o, "dense_bytes") + u64(o, "expert_bytes"));
}

TEST(sluice_inspect_plan, the_default_budget_gives_a_plan) {
    const auto o = plan_json("");
    EXPECT_TRUE(o.contains("strategy"));
    EXPECT_GT(u64(o, "budget_bytes"), 0u);
}

TEST(sluice_inspect_plan, a_small_budget_streams_experts_bounded_by_the_given_bandwidth) {
    const auto resident = plan_json("--memory-budget 8GiB --ctx 256 --parallel 2");
    const auto o =
        plan_json("--ctx 256 --parallel 2 --disk-bandwidth 2.5 --memory-budget " + budget_with_slots(resident, 6));
    EXPECT_EQ(o.at("strategy").as_string(), "stream_experts");
    EXPECT_EQ(u64(o, "cache_slots"), 6u);
    EXPECT_EQ(u64(o, "n_seq"), 2u);
    EXPECT_EQ(o.at("disk_bandwidth_source").as_string(), "flag");
    EXPECT_DOUBLE_EQ(o.at("disk_bandwidth_bytes_per_s").to_number<double>(), 2.5e9);
    EXPECT_GT(u64(o, "read_bytes_per_token"), 0u);
    EXPECT_NEAR(o.at("tokens_per_s_bound").to_number<double>(),
                2.5e9 / static_cast<double>(u64(o, "read_bytes_per_token")), 1e-6);
    // No bandwidth: no bound, and a note saying how to get one.
    const auto unbounded = plan_json("--ctx 256 --parallel 2 --memory-budget " + budget_with_slots(resident, 6));
    EXPECT_EQ(unbounded.at("tokens_per_s_bound").to_number<double>(), 0.0);
    EXPECT_TRUE(unbounded.contains("note"));
}

TEST(sluice_inspect_plan, probe_measures_the_disk) {
    const auto resident = plan_json("--memory-budget 8GiB --ctx 256");
    const auto o = plan_json("--ctx 256 --probe --memory-budget " + budget_with_slots(resident, 4));
    EXPECT_EQ(o.at("strategy").as_string(), "stream_experts");
    EXPECT_EQ(o.at("disk_bandwidth_source").as_string(), "probe");
    EXPECT_GT(o.at("disk_bandwidth_bytes_per_s").to_number<double>(), 0.0);
    EXPECT_GT(o.at("tokens_per_s_bound").to_number<double>(), 0.0);
}

TEST(sluice_inspect_plan, a_budget_too_small_names_the_numbers) {
    const auto r = inspect_plan("--memory-budget 1MiB");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("memory budget 1.00 MiB is too small for this model: dense weights"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("smallest expert cache"), std::string::npos) << r.err;
}

TEST(sluice_inspect_plan, bad_flags_fail_with_a_message) {
    for (const char* flags : {"--memory-budget '4 XB'", "--memory-budget lots", "--memory-budget 0",
                              "--disk-bandwidth -1", "--parallel 0"}) {
        SCOPED_TRACE(flags);
        const auto r = inspect_plan(flags);
        EXPECT_NE(r.status, 0);
        EXPECT_FALSE(r.err.empty());
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
    const auto unit = inspect_plan("--memory-budget '4 XB'");
    EXPECT_NE(unit.err.find("--memory-budget: \"4 XB\": unknown unit \"XB\""), std::string::npos) << unit.err;
}

TEST(sluice_memory_budget, run_bench_and_serve_reject_a_bad_budget_before_loading) {
    const auto model = shell_quote(tiny_moe_model().string());
    for (const std::string cmd : {" run -p hi -n 1 -m ", " bench -n 1 -m ", " serve --port 0 -m "}) {
        SCOPED_TRACE(cmd);
        const auto r = run_process(sluice_exe() + cmd + model + " --memory-budget 12QB");
        EXPECT_NE(r.status, 0);
        EXPECT_NE(r.err.find("--memory-budget"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("unknown unit"), std::string::npos) << r.err;
    }
}
