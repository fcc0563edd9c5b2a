// A model file truncated under a server that streams experts from it: the requests that need a lost expert
// fail cleanly, /health answers 503 with the fault (the file's sizes and the failed reads), /metrics counts the
// failures, and the server keeps answering.
#include "../cli/scratch.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

TEST(file_fault, a_file_truncated_under_a_streaming_server_makes_health_report_the_fault) {
    const auto copy = scratch_dir() / "truncated-later.gguf";
    std::filesystem::copy_file(tiny_model(), copy, std::filesystem::copy_options::overwrite_existing);
    const std::vector<std::string> plan_args{"--ctx", "512", "--parallel", "1"};
    auto args = plan_args;
    args.insert(args.end(), {"--memory-budget", std::to_string(streaming_budget(plan_args, 4)), "--disk-bandwidth", "1"});
    server_process server(args, copy);
    const auto healthy = send_request(server.port(), "GET", "/health");
    ASSERT_EQ(healthy.status, 200) << healthy.body;
    ASSERT_EQ(body_json(healthy).at("memory").at("strategy"), "stream_experts") << healthy.body;
    const std::string body = R"({"prompt":"Once upon a time","max_tokens":16,"ignore_eos":true})";
    ASSERT_EQ(post_json(server.port(), "/v1/completions", body).status, 200);

    // Cut the file to its header and dense part: most experts are gone.
    const auto size = std::filesystem::file_size(copy);
    std::filesystem::resize_file(copy, size / 2);

    const auto fault = send_request(server.port(), "GET", "/health");
    EXPECT_EQ(fault.status, 503) << fault.body;
    const auto v = body_json(fault);
    EXPECT_EQ(v.at("status"), "fault") << fault.body;
    const std::string file = json::value_to<std::string>(v.at("fault").at("file"));
    EXPECT_NE(file.find("truncated from " + std::to_string(size)), std::string::npos) << file;

    // Requests that need a lost expert fail with an error, never a crash; /health then counts the failed reads.
    bool failed = false;
    for (int i = 0; i < 8 && !failed; ++i) {
        const auto r = post_json(server.port(), "/v1/completions",
                                 R"({"prompt":"Request )" + std::to_string(i) + R"(","max_tokens":32,"ignore_eos":true})");
        EXPECT_TRUE(r.status == 200 || r.status == 500) << r.status << " " << r.error;
        failed = r.status == 500;
        if (failed) {
            EXPECT_EQ(openai_error_problem(r), "") << r.body;
        }
    }
    EXPECT_TRUE(failed) << "no request read a lost expert";
    const auto after = body_json(send_request(server.port(), "GET", "/health"));
    EXPECT_GT(after.at("fault").at("read_failures").to_number<double>(), 0) << after;
    EXPECT_FALSE(after.at("fault").at("last_read_failure").as_string().empty()) << after;
    EXPECT_TRUE(server.running());
}

} // namespace
} // namespace sluice::test
