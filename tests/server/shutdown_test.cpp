// SIGTERM drains: no new connections, generations that finish within --shutdown-grace complete normally,
// those that do not end with a final event (an SSE error event then [DONE], a 503 for a whole response), and
// the server exits 0.
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

/// A completion that runs for seconds on the tiny model.
const std::string endless = R"({"prompt":"Hi","max_tokens":7000,"ignore_eos":true)";

/// The `data:` payloads of an SSE body, in order.
std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    for (std::size_t pos = 0; pos < body.size();) {
        const auto end = body.find("\n\n", pos);
        if (end == std::string::npos) {
            break;
        }
        const std::string event = body.substr(pos, end - pos);
        if (event.rfind("data: ", 0) == 0) {
            out.push_back(event.substr(6));
        }
        pos = end + 2;
    }
    return out;
}

TEST(shutdown, a_stream_running_past_the_grace_ends_with_a_shutdown_error_event_and_done) {
    server_process server({"--shutdown-grace", "300ms", "--ctx", "8192"});
    auto streamed = std::async(std::launch::async, [&] {
        return post_json(server.port(), "/v1/completions", endless + R"(,"stream":true})");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // tokens are flowing
    const auto t0 = clock_type::now();
    server.terminate();
    const auto r = streamed.get();
    ASSERT_EQ(r.status, 200) << r.error;
    const auto events = sse_payloads(r.body);
    ASSERT_GE(events.size(), 3u) << r.body.substr(0, 500);
    EXPECT_EQ(events.back(), "[DONE]");
    const auto last = json::parse(events[events.size() - 2]);
    ASSERT_TRUE(last.is_object() && last.as_object().contains("error")) << events[events.size() - 2];
    EXPECT_EQ(last.at("error").at("code"), "server_shutdown");
    EXPECT_EQ(server.wait_exit(), 0) << server.log();
    EXPECT_LT(clock_type::now() - t0, std::chrono::seconds(4)) << "the grace was 300 ms";
    EXPECT_NE(server.log().find("finish=shutdown"), std::string::npos) << server.log();
}

TEST(shutdown, a_generation_within_the_grace_completes_and_new_connections_are_refused) {
    server_process server({"--shutdown-grace", "20s"});
    auto whole = std::async(std::launch::async, [&] {
        return post_json(server.port(), "/v1/completions", R"({"prompt":"Hi","max_tokens":1500,"ignore_eos":true})");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server.terminate();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto refused = send_request(server.port(), "GET", "/health");
    EXPECT_EQ(refused.status, 0) << "the server accepted a connection after SIGTERM";
    const auto r = whole.get();
    ASSERT_EQ(r.status, 200) << r.error << r.body;
    const auto v = body_json(r);
    EXPECT_EQ(v.at("choices").at(0).at("finish_reason"), "length");
    EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 1500);
    EXPECT_EQ(server.wait_exit(std::chrono::seconds(5)), 0) << "it should exit once the generation is done\n"
                                                            << server.log();
}

TEST(shutdown, a_whole_response_past_the_grace_is_a_503_server_shutdown) {
    server_process server({"--shutdown-grace", "300ms", "--ctx", "8192"});
    auto whole = std::async(std::launch::async, [&] { return post_json(server.port(), "/v1/completions", endless + "}"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server.terminate();
    const auto r = whole.get();
    EXPECT_EQ(r.status, 503) << r.error << r.body;
    EXPECT_EQ(openai_error_problem(r), "");
    EXPECT_EQ(body_json(r).at("error").at("code"), "server_shutdown") << r.body;
    EXPECT_EQ(server.wait_exit(), 0) << server.log();
}

TEST(shutdown, an_idle_server_exits_at_once) {
    server_process server({"--shutdown-grace", "30s"});
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
    const auto t0 = clock_type::now();
    server.terminate();
    EXPECT_EQ(server.wait_exit(), 0) << server.log();
    EXPECT_LT(clock_type::now() - t0, std::chrono::seconds(2));
}

} // namespace
} // namespace sluice::test
