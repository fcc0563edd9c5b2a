// GET /metrics on a running `sluice serve`: the counters move by what the requests did (the disk and expert-cache
// counters when experts stream, and only then), and the text is valid Prometheus exposition format 0.0.4
// (checked by a grammar here and by `promtool check metrics` when present).
#include "../cli/process.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

const std::string chat_body =
    R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":5,"ignore_eos":true,"seed":3})";
const std::string streamed_chat_body = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":6,)"
                                       R"("ignore_eos":true,"seed":3,"stream":true})";

/// Sample lines by their full series name ("name{labels}"); fails the test on a line that is not a comment,
/// blank, or `name{labels} value`.
std::map<std::string, double> parse_samples(const std::string& text) {
    static const std::regex sample(
        R"re(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*,?\})? )re"
        R"re(([-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?|[-+]Inf|NaN)$)re");
    static const std::regex comment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*$)");
    std::map<std::string, double> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || std::regex_match(line, comment)) {
            continue;
        }
        std::smatch m;
        if (!std::regex_match(line, m, sample)) {
            ADD_FAILURE() << "not a sample line: '" << line << "'";
            continue;
        }
        const std::string series = line.substr(0, line.rfind(' '));
        out[series] = std::strtod(line.substr(line.rfind(' ') + 1).c_str(), nullptr);
    }
    return out;
}

std::map<std::string, double> scrape(unsigned short port, const header_list& headers = {}) {
    const auto r = send_request(port, "GET", "/metrics", {}, headers);
    EXPECT_EQ(r.status, 200) << r.error << r.body;
    EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "text/plain; version=0.0.4");
    return parse_samples(r.body);
}

double value(const std::map<std::string, double>& s, const std::string& series) {
    const auto it = s.find(series);
    return it == s.end() ? 0.0 : it->second;
}

/// Every histogram's buckets are cumulative and end with le="+Inf" equal to _count.
void expect_histogram_consistent(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    std::string line;
    std::vector<double> buckets;
    std::string last_le;
    double count = -1;
    const std::string bucket_prefix = name + "_bucket{le=\"";
    while (std::getline(in, line)) {
        if (line.rfind(bucket_prefix, 0) == 0) {
            const auto close = line.find('"', bucket_prefix.size());
            last_le = line.substr(bucket_prefix.size(), close - bucket_prefix.size());
            buckets.push_back(std::strtod(line.substr(line.rfind(' ') + 1).c_str(), nullptr));
        } else if (line.rfind(name + "_count ", 0) == 0) {
            count = std::strtod(line.substr(line.rfind(' ') + 1).c_str(), nullptr);
        }
    }
    ASSERT_FALSE(buckets.empty()) << name;
    for (std::size_t i = 1; i < buckets.size(); ++i) {
        EXPECT_LE(buckets[i - 1], buckets[i]) << name << " bucket " << i << " is not cumulative";
    }
    EXPECT_EQ(last_le, "+Inf") << name;
    EXPECT_EQ(buckets.back(), count) << name;
}

TEST(metrics, counters_move_by_what_completions_and_a_404_did) {
    server_process server;
    const auto before = scrape(server.port());
    const std::string chat_ok = R"(sluice_requests_total{route="/v1/chat/completions",status="200"})";
    const std::string not_found = R"(sluice_requests_total{route="unmatched",status="404"})";

    const auto whole = post_json(server.port(), "/v1/chat/completions", chat_body);
    ASSERT_EQ(whole.status, 200) << whole.body;
    const auto usage = body_json(whole).at("usage");
    const auto streamed = post_json(server.port(), "/v1/chat/completions", streamed_chat_body);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    const auto missing = send_request(server.port(), "GET", "/no/such/route");
    ASSERT_EQ(missing.status, 404);

    const auto after = scrape(server.port());
    EXPECT_EQ(value(after, chat_ok) - value(before, chat_ok), 2);
    EXPECT_EQ(value(after, not_found) - value(before, not_found), 1);
    EXPECT_EQ(value(after, R"(sluice_requests_total{route="/metrics",status="200"})"), 1) << "the first scrape";
    EXPECT_EQ(value(after, "sluice_generated_tokens_total") - value(before, "sluice_generated_tokens_total"),
              static_cast<double>(usage.at("completion_tokens").as_int64()) + 6);
    EXPECT_EQ(value(after, "sluice_prompt_tokens_total") - value(before, "sluice_prompt_tokens_total"),
              2.0 * static_cast<double>(usage.at("prompt_tokens").as_int64()));
    EXPECT_EQ(value(after, "sluice_time_to_first_token_seconds_count") -
                  value(before, "sluice_time_to_first_token_seconds_count"),
              2);
    EXPECT_EQ(value(after, "sluice_inter_token_latency_seconds_count") -
                  value(before, "sluice_inter_token_latency_seconds_count"),
              (5 - 1) + (6 - 1));
    EXPECT_GT(value(after, "sluice_time_to_first_token_seconds_sum"), 0);
    EXPECT_EQ(value(after, "sluice_requests_in_flight"), 0);
    EXPECT_EQ(value(after, "sluice_requests_queued"), 0);
    EXPECT_GT(value(after, "sluice_kv_cache_tokens"), 0);
    EXPECT_GT(value(after, "sluice_model_resident_bytes"), 0);
    // The batch engine ran both prompts as prefill steps and the decode tokens as steps.
    const auto moved = [&](const std::string& name) { return value(after, name) - value(before, name); };
    EXPECT_GT(moved("sluice_batch_steps_total"), 0);
    EXPECT_GE(moved("sluice_batch_prefill_steps_total"), 1);
    EXPECT_GE(moved("sluice_batch_sequence_rows_total"), moved("sluice_batch_steps_total"));
    EXPECT_GE(moved("sluice_batch_tokens_total"),
              moved("sluice_batch_prefill_tokens_total") + moved("sluice_batch_steps_total"));
    EXPECT_GT(moved("sluice_batch_step_seconds_total"), 0);
    // Prefill steps took time, and the time before them and their expert waits are counted (never negative).
    EXPECT_GT(moved("sluice_batch_prefill_step_seconds_total"), 0);
    EXPECT_GE(moved("sluice_batch_prefill_queue_seconds_total"), 0);
    EXPECT_GE(moved("sluice_batch_prefill_expert_wait_seconds_total"), 0);
    EXPECT_LE(moved("sluice_batch_prefill_expert_wait_seconds_total"),
              moved("sluice_batch_prefill_step_seconds_total"));
}

TEST(metrics, exposition_parses_and_histograms_are_cumulative_ending_with_inf) {
    server_process server;
    ASSERT_EQ(post_json(server.port(), "/v1/chat/completions", chat_body).status, 200);
    const auto r = send_request(server.port(), "GET", "/metrics");
    ASSERT_EQ(r.status, 200);
    const auto samples = parse_samples(r.body);
    for (const std::string name : {"sluice_requests_total",
                                   "sluice_requests_in_flight",
                                   "sluice_requests_queued",
                                   "sluice_prompt_tokens_total",
                                   "sluice_generated_tokens_total",
                                   "sluice_time_to_first_token_seconds",
                                   "sluice_inter_token_latency_seconds",
                                   "sluice_kv_cache_tokens",
                                   "sluice_model_resident_bytes",
                                   "sluice_memory_budget_bytes",
                                   "sluice_expert_streaming",
                                   "sluice_expert_cache_slots",
                                   "sluice_expert_cache_slots_filled",
                                   "sluice_expert_cache_bytes",
                                   "sluice_expert_cache_hits_total",
                                   "sluice_expert_cache_misses_total",
                                   "sluice_expert_cache_evictions_total",
                                   "sluice_expert_prefetch_issued_total",
                                   "sluice_expert_prefetch_used_total",
                                   "sluice_expert_prefetch_wasted_total",
                                   "sluice_expert_prefetch_depth2_issued_total",
                                   "sluice_expert_prefetch_depth2_used_total",
                                   "sluice_expert_prefetch_depth2_wasted_total",
                                   "sluice_expert_prefetch_dropped_total",
                                   "sluice_expert_prefetch_promoted_total",
                                   "sluice_disk_reads_deferred_total",
                                   "sluice_disk_reads_dropped_total",
                                   "sluice_disk_demand_reads_total",
                                   "sluice_disk_demand_reads_queued_behind_total",
                                   "sluice_disk_demand_read_seconds_total",
                                   "sluice_disk_reads_total",
                                   "sluice_disk_read_failures_total",
                                   "sluice_disk_read_bytes_total",
                                   "sluice_disk_busy_seconds_total",
                                   "sluice_disk_read_seconds"}) {
        EXPECT_NE(r.body.find("# HELP " + name + " "), std::string::npos) << name;
        EXPECT_NE(r.body.find("# TYPE " + name + " "), std::string::npos) << name;
    }
    expect_histogram_consistent(r.body, "sluice_time_to_first_token_seconds");
    expect_histogram_consistent(r.body, "sluice_inter_token_latency_seconds");
    EXPECT_EQ(value(samples, "sluice_time_to_first_token_seconds_count"), 1);
}

/// Sum of a per-layer counter over its `layer` labels.
double layer_sum(const std::map<std::string, double>& s, const std::string& name) {
    double sum = 0;
    for (const auto& [series, v] : s) {
        if (series.rfind(name + "{layer=\"", 0) == 0) {
            sum += v;
        }
    }
    return sum;
}

/// The expert-streaming metrics (disk reads, expert cache, prefetch): every one of them.
const std::vector<std::string> streaming_counters = {"sluice_disk_reads_total",
                                                     "sluice_disk_read_bytes_total",
                                                     "sluice_disk_read_seconds_count",
                                                     "sluice_disk_busy_seconds_total",
                                                     "sluice_expert_prefetch_issued_total",
                                                     "sluice_expert_prefetch_used_total",
                                                     "sluice_expert_prefetch_wasted_total"};
const std::vector<std::string> per_layer_counters = {
    "sluice_expert_cache_hits_total", "sluice_expert_cache_misses_total", "sluice_expert_cache_evictions_total"};

TEST(metrics, disk_and_expert_cache_counters_move_when_experts_stream) {
    const std::vector<std::string> plan_args{"--ctx", "512", "--parallel", "1"};
    const auto budget = streaming_budget(plan_args, 4);
    auto args = plan_args;
    args.insert(args.end(), {"--memory-budget", std::to_string(budget), "--disk-bandwidth", "1"});
    server_process server(args);
    const auto health = body_json(send_request(server.port(), "GET", "/health"));
    ASSERT_EQ(health.at("memory").at("strategy").as_string(), "stream_experts") << health;
    ASSERT_EQ(health.at("memory").at("cache_slots").to_number<int>(), 4) << health;

    const auto before = scrape(server.port());
    EXPECT_EQ(value(before, "sluice_expert_streaming"), 1);
    EXPECT_EQ(value(before, "sluice_expert_cache_slots"), 4);
    EXPECT_EQ(value(before, "sluice_memory_budget_bytes"), static_cast<double>(budget));
    EXPECT_EQ(value(before, "sluice_expert_cache_bytes"),
              static_cast<double>(health.at("memory").at("cache_bytes").to_number<std::uint64_t>()));
    for (const auto& body : {chat_body, streamed_chat_body}) {
        ASSERT_EQ(post_json(server.port(), "/v1/chat/completions", body).status, 200);
    }
    const auto after = scrape(server.port());
    const auto moved = [&](const std::string& name) { return value(after, name) - value(before, name); };
    // 4 slots hold a quarter of the tiny model's 16 experts: every token misses, reads and evicts.
    EXPECT_GT(moved("sluice_disk_reads_total"), 0);
    EXPECT_GT(moved("sluice_disk_read_bytes_total"), 0);
    EXPECT_EQ(moved("sluice_disk_read_seconds_count"),
              moved("sluice_disk_reads_total") + moved("sluice_disk_read_failures_total"));
    EXPECT_GT(moved("sluice_disk_read_seconds_sum"), 0);
    EXPECT_GT(moved("sluice_disk_busy_seconds_total"), 0);
    EXPECT_EQ(moved("sluice_disk_read_failures_total"), 0);
    EXPECT_GT(layer_sum(after, "sluice_expert_cache_misses_total") -
                  layer_sum(before, "sluice_expert_cache_misses_total"),
              0);
    EXPECT_GT(layer_sum(after, "sluice_expert_cache_evictions_total") -
                  layer_sum(before, "sluice_expert_cache_evictions_total"),
              0);
    EXPECT_GT(layer_sum(after, "sluice_expert_cache_hits_total"), 0) << "a token's experts repeat across tokens";
    EXPECT_GT(moved("sluice_expert_prefetch_issued_total"), 0);
    EXPECT_GE(value(after, "sluice_expert_prefetch_issued_total"),
              value(after, "sluice_expert_prefetch_used_total") + value(after, "sluice_expert_prefetch_wasted_total"));
    EXPECT_GT(value(after, "sluice_expert_cache_slots_filled"), 0);
    EXPECT_LE(value(after, "sluice_expert_cache_slots_filled"), 4);
    const auto r = send_request(server.port(), "GET", "/metrics");
    expect_histogram_consistent(r.body, "sluice_disk_read_seconds");
}

TEST(metrics, disk_and_expert_cache_counters_stay_zero_when_the_model_is_resident) {
    server_process server;
    const auto health = body_json(send_request(server.port(), "GET", "/health"));
    ASSERT_EQ(health.at("memory").at("strategy").as_string(), "resident") << health;
    ASSERT_EQ(post_json(server.port(), "/v1/chat/completions", streamed_chat_body).status, 200);
    const auto r = send_request(server.port(), "GET", "/metrics");
    const auto after = parse_samples(r.body);
    for (const auto& name : streaming_counters) {
        EXPECT_NE(after.find(name), after.end()) << name << " is exposed";
        EXPECT_EQ(value(after, name), 0) << name;
    }
    for (const auto& name : per_layer_counters) {
        EXPECT_NE(r.body.find(name + "{layer=\"0\"} 0\n"), std::string::npos) << name << " has a layer-0 sample";
        EXPECT_EQ(layer_sum(after, name), 0) << name;
    }
    EXPECT_EQ(value(after, "sluice_expert_streaming"), 0);
    EXPECT_EQ(value(after, "sluice_expert_cache_slots"), 0);
    EXPECT_EQ(value(after, "sluice_expert_cache_bytes"), 0);
    EXPECT_GT(value(after, "sluice_memory_budget_bytes"), value(after, "sluice_model_resident_bytes"));
    expect_histogram_consistent(r.body, "sluice_disk_read_seconds");
}

TEST(metrics, api_key_guards_metrics_but_not_health) {
    server_process server({"--api-key", "k3y"});
    EXPECT_EQ(send_request(server.port(), "GET", "/metrics").status, 401);
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
    const auto ok = scrape(server.port(), {{"Authorization", "Bearer k3y"}});
    EXPECT_EQ(value(ok, R"(sluice_requests_total{route="/metrics",status="401"})"), 1);
}

TEST(metrics, promtool_check_metrics_accepts_a_scrape) {
    const auto which = run_process("command -v promtool");
    if (which.status != 0) {
        GTEST_SKIP() << "promtool is not installed (apt-get install prometheus provides it); the exposition was "
                        "NOT checked by promtool";
    }
    // A resident model and one whose experts stream (labelled per-layer series, a filled disk histogram).
    const std::vector<std::string> plan_args{"--ctx", "512", "--parallel", "1"};
    auto streaming = plan_args;
    streaming.insert(streaming.end(),
                     {"--memory-budget", std::to_string(streaming_budget(plan_args, 4)), "--disk-bandwidth", "1"});
    for (const auto& args : {std::vector<std::string>{}, streaming}) {
        server_process server(args);
        ASSERT_EQ(post_json(server.port(), "/v1/chat/completions", streamed_chat_body).status, 200);
        const auto r = send_request(server.port(), "GET", "/metrics");
        ASSERT_EQ(r.status, 200);
        const auto path = std::filesystem::temp_directory_path() / ("sluice_metrics_" + std::to_string(server.port()));
        std::ofstream(path) << r.body;
        const auto check = run_process("promtool check metrics < " + shell_quote(path.string()));
        std::filesystem::remove(path);
        EXPECT_EQ(check.status, 0) << check.out << check.err << "\n" << r.body;
    }
}

} // namespace
} // namespace sluice::test
