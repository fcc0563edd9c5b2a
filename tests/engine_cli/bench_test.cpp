// Runs `sluice bench` as a process on a tiny random model: the JSON report has every test with positive
// throughputs, the table names the tests, and bad options fail with a message.
#include "tiny_model.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <string>

namespace json = boost::json;
using sluice::test::run_process;
using sluice::test::shell_quote;
using sluice::test::sluice_exe;
using sluice::test::tiny_moe_model;

namespace {

sluice::test::process_result sluice_bench(const std::string& flags) {
    return run_process(sluice_exe() + " bench --threads 2 -m " + shell_quote(tiny_moe_model().string()) + " " + flags);
}

} // namespace

TEST(sluice_bench, json_reports_positive_throughput_for_every_test) {
    const auto r = sluice_bench("--json -p 8,32 -n 8 -r 2");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto o = json::parse(r.out).as_object();
    const auto& m = o.at("model").as_object();
    EXPECT_EQ(m.at("arch").as_string(), "qwen3moe");
    EXPECT_GT(m.at("weight_bytes").to_number<double>(), 0.0);
    EXPECT_EQ(m.at("threads").to_number<int>(), 2);
    EXPECT_EQ(m.at("cache_policy").as_string(), "lru-2");
    const auto& results = o.at("results").as_array();
    ASSERT_EQ(results.size(), 3u);
    const char* names[] = {"pp8", "pp32", "tg8"};
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& row = results[i].as_object();
        SCOPED_TRACE(names[i]);
        EXPECT_EQ(row.at("test").as_string(), names[i]);
        EXPECT_EQ(row.at("repetitions").to_number<int>(), 2);
        EXPECT_EQ(row.at("samples").as_array().size(), 2u);
        const auto& tps = row.at("tokens_per_s").as_object();
        for (const char* key : {"mean", "min", "max"}) {
            EXPECT_GT(tps.at(key).to_number<double>(), 0.0) << key;
        }
        EXPECT_GE(tps.at("stddev").to_number<double>(), 0.0);
        EXPECT_LE(tps.at("min").to_number<double>(), tps.at("mean").to_number<double>());
        EXPECT_GE(tps.at("max").to_number<double>(), tps.at("mean").to_number<double>());
    }
    EXPECT_EQ(results[0].at("kind").as_string(), "prefill");
    EXPECT_EQ(results[2].at("kind").as_string(), "decode");
}

TEST(sluice_bench, table_names_the_model_and_every_test) {
    const auto r = sluice_bench("-p 16 -n 4 -r 1");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* s : {"qwen3moe", "pp16", "tg4", "tokens/s", "threads"}) {
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    }
}

TEST(sluice_bench, bad_options_fail_with_a_message) {
    for (const char* flags : {"-r 0", "-p 0"}) {
        const auto r = sluice_bench(flags);
        EXPECT_EQ(r.status, 1) << flags;
        EXPECT_NE(r.err.find("sluice bench: "), std::string::npos) << r.err;
    }
    const auto policy = sluice_bench("--cache-policy pin-hot:0");
    EXPECT_EQ(policy.status, 1);
    EXPECT_NE(policy.err.find("--cache-policy: cache policy \"pin-hot:0\""), std::string::npos) << policy.err;
    const auto order = sluice_bench("--read-order lifo");
    EXPECT_EQ(order.status, 1);
    EXPECT_NE(order.err.find("--read-order: unknown read order \"lifo\" (expected fifo or priority)"),
              std::string::npos)
        << order.err;
    const auto window = sluice_bench("--read-window 5000");
    EXPECT_EQ(window.status, 1);
    EXPECT_NE(window.err.find("--read-window must be 0 (the default) to 1024 reads"), std::string::npos) << window.err;
    for (const char* flags :
         {"-p 8 -n 4 -r 1 --read-order fifo", "-p 8 -n 4 -r 1 --read-order priority --read-window 2"}) {
        const auto ok = sluice_bench(flags);
        EXPECT_EQ(ok.status, 0) << flags << "\n" << ok.err;
    }
    const auto chosen = sluice_bench("--json -p 8 -n 4 -r 1 --cache-policy lru-2");
    ASSERT_EQ(chosen.status, 0) << chosen.err;
    EXPECT_EQ(json::parse(chosen.out).at("model").at("cache_policy").as_string(), "lru-2");
    const auto missing = run_process(sluice_exe() + " bench -m /nonexistent/model.gguf");
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("model.gguf"), std::string::npos) << missing.err;
}
