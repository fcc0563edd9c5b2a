// A hostile chat template in the model file: its render runs off the event loop (so /health and other
// requests keep answering while it burns its budget), a limit it exceeds is a 400 `template_error` naming the
// limit, a template that does not parse is reported per chat request while plain completions still work.
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

namespace sluice::test {
namespace {

namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

const std::string chat_body = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":2})";

/// 10^12 empty iterations over one list of a million: only the time limit stops it.
constexpr std::string_view endless_template =
    "{% set r = range(1000000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}<|im_start|>assistant\n";

/// Output that doubles until the output or value limit stops it.
constexpr std::string_view doubling_template =
    "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}";

/// Not Jinja at all.
constexpr std::string_view broken_template = "{% for m in messages %}{{ m.content }";

std::string error_code(const http_reply& r) {
    const auto v = body_json(r);
    return json::value_to<std::string>(v.at("error").at("code"));
}

TEST(hostile_template, a_render_running_to_its_time_limit_leaves_health_and_completions_answering) {
    server_process server({"--template-max-time-ms", "3000", "--template-max-steps", "1000000000000", "--template-max-bytes", "1099511627776"},
                          tiny_model_with_template("endless", endless_template));
    const auto t0 = clock_type::now();
    auto slow = std::async(std::launch::async, [&] {
        return post_json(server.port(), "/v1/chat/completions", chat_body);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // the render has started
    // While the template burns its 3 s, the event loop answers: /health at once, and a plain completion.
    for (int i = 0; i < 5; ++i) {
        const auto h0 = clock_type::now();
        const auto health = send_request(server.port(), "GET", "/health");
        EXPECT_EQ(health.status, 200) << health.error;
        EXPECT_LT(clock_type::now() - h0, std::chrono::milliseconds(500)) << "/health waited for the render";
    }
    const auto plain = post_json(server.port(), "/v1/completions", R"({"prompt":"Hello","max_tokens":2})");
    EXPECT_EQ(plain.status, 200) << plain.body;
    EXPECT_LT(clock_type::now() - t0, std::chrono::milliseconds(2500)) << "the completion waited for the render";

    const auto r = slow.get();
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(openai_error_problem(r), "");
    EXPECT_EQ(error_code(r), "template_error");
    EXPECT_NE(r.body.find("max_time"), std::string::npos) << r.body;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

TEST(hostile_template, a_template_past_its_memory_limits_gets_400_template_error_naming_the_limit) {
    server_process server({}, tiny_model_with_template("doubling", doubling_template));
    for (int i = 0; i < 3; ++i) {
        const auto r = post_json(server.port(), "/v1/chat/completions", chat_body);
        EXPECT_EQ(r.status, 400) << r.body;
        EXPECT_EQ(error_code(r), "template_error");
        EXPECT_NE(r.body.find("TemplateLimitError"), std::string::npos) << r.body;
        EXPECT_NE(r.body.find("max_"), std::string::npos) << r.body;
    }
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

TEST(hostile_template, a_template_that_does_not_parse_fails_chat_requests_and_leaves_completions_working) {
    server_process server({}, tiny_model_with_template("broken", broken_template));
    const auto r = post_json(server.port(), "/v1/chat/completions", chat_body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(error_code(r), "template_error");
    EXPECT_NE(r.body.find("TemplateSyntaxError"), std::string::npos) << r.body;
    const auto plain = post_json(server.port(), "/v1/completions", R"({"prompt":"Hello","max_tokens":2})");
    EXPECT_EQ(plain.status, 200) << plain.body;
}

} // namespace
} // namespace sluice::test
