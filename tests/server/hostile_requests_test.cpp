// Malformed and hostile requests: each gets the expected status and an OpenAI-shaped error body, and the
// server answers /health after every group.
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <optional>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

struct hostile_case {
    std::string name;
    std::string method;
    std::string target;
    std::string body;
    int status;
    std::optional<std::string> param; ///< the error's expected `param`, when it names a field
    header_list headers = {};
};

void expect_answers(server_process& server, const std::vector<hostile_case>& cases) {
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        header_list h = c.headers;
        if (c.method == "POST") {
            h.emplace_back("Content-Type", "application/json");
        }
        const auto r = send_request(server.port(), c.method, c.target, c.body, h);
        EXPECT_EQ(r.status, c.status) << r.error << r.body;
        EXPECT_EQ(openai_error_problem(r), "");
        if (c.param) {
            const auto v = body_json(r);
            EXPECT_EQ(v.at("error").at("param"), json::value(*c.param)) << r.body;
        }
    }
    const auto health = send_request(server.port(), "GET", "/health");
    EXPECT_EQ(health.status, 200) << "the server stopped answering: " << health.error;
}

const std::string chat = "/v1/chat/completions";
const std::string comp = "/v1/completions";
const std::string hello = R"("messages":[{"role":"user","content":"Hello"}])";

TEST(hostile, malformed_json_bodies_get_400_and_the_server_stays_healthy) {
    server_process server;
    std::string deep(10000, '[');
    expect_answers(server, {
                               {"bad JSON", "POST", chat, "{bad", 400, std::nullopt},
                               {"empty body", "POST", chat, "", 400, std::nullopt},
                               {"array body", "POST", chat, "[]", 400, std::nullopt},
                               {"string body", "POST", chat, R"("hi")", 400, std::nullopt},
                               {"truncated JSON", "POST", chat, R"({"messages":[)", 400, std::nullopt},
                               {"invalid UTF-8", "POST", chat,
                                "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, std::nullopt},
                               {"lone surrogate", "POST", chat, R"({"messages":[{"role":"user","content":"\ud800"}]})",
                                400, std::nullopt},
                               {"10000 nested arrays", "POST", chat, deep, 400, std::nullopt},
                               {"trailing garbage", "POST", chat, "{" + hello + "} x", 400, std::nullopt},
                           });
}

TEST(hostile, wrong_types_and_out_of_range_values_get_400_naming_the_field) {
    server_process server;
    expect_answers(
        server, {
                    {"messages not an array", "POST", chat, R"({"messages":"hi"})", 400, "messages"},
                    {"messages missing", "POST", chat, R"({"model":"x"})", 400, "messages"},
                    {"empty messages", "POST", chat, R"({"messages":[]})", 400, "messages"},
                    {"message not an object", "POST", chat, R"({"messages":[1]})", 400, "messages[0]"},
                    {"unknown role", "POST", chat, R"({"messages":[{"role":"wizard","content":"x"}]})", 400,
                     "messages[0].role"},
                    {"missing content", "POST", chat, R"({"messages":[{"role":"user"}]})", 400, "messages[0].content"},
                    {"numeric content", "POST", chat, R"({"messages":[{"role":"user","content":5}]})", 400,
                     "messages[0].content"},
                    {"image part", "POST", chat,
                     R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})", 400,
                     "messages[0].content[0].image_url"},
                    {"unknown message field", "POST", chat, R"({"messages":[{"role":"user","content":"x","mood":1}]})",
                     400, "messages[0].mood"},
                    {"temperature string", "POST", chat, "{" + hello + R"(,"temperature":"hot"})", 400, "temperature"},
                    {"temperature 3", "POST", chat, "{" + hello + R"(,"temperature":3})", 400, "temperature"},
                    {"negative max_tokens", "POST", chat, "{" + hello + R"(,"max_tokens":-5})", 400, "max_tokens"},
                    {"zero max_tokens", "POST", chat, "{" + hello + R"(,"max_tokens":0})", 400, "max_tokens"},
                    {"huge max_tokens", "POST", chat, "{" + hello + R"(,"max_tokens":1e30})", 400, "max_tokens"},
                    {"max_tokens beyond uint64", "POST", chat,
                     "{" + hello + R"(,"max_tokens":99999999999999999999999})", 400, "max_tokens"},
                    {"huge top_k", "POST", chat, "{" + hello + R"(,"top_k":99999999999})", 400, "top_k"},
                    {"top_p 1.5", "POST", chat, "{" + hello + R"(,"top_p":1.5})", 400, "top_p"},
                    {"fractional seed", "POST", chat, "{" + hello + R"(,"seed":1.5})", 400, "seed"},
                    {"stream not a bool", "POST", chat, "{" + hello + R"(,"stream":"yes"})", 400, "stream"},
                    {"numeric stop", "POST", chat, "{" + hello + R"(,"stop":[1]})", 400, "stop[0]"},
                    {"empty stop", "POST", chat, "{" + hello + R"(,"stop":[""]})", 400, "stop"},
                    {"n = 0", "POST", chat, "{" + hello + R"(,"n":0})", 400, "n"},
                    {"n = 129", "POST", chat, "{" + hello + R"(,"n":129})", 400, "n"},
                    {"logprobs not a bool", "POST", chat, "{" + hello + R"(,"logprobs":1})", 400, "logprobs"},
                    {"top_logprobs 21", "POST", chat, "{" + hello + R"(,"logprobs":true,"top_logprobs":21})", 400,
                     "top_logprobs"},
                    {"top_logprobs without logprobs", "POST", chat, "{" + hello + R"(,"top_logprobs":2})", 400,
                     "top_logprobs"},
                    {"completion logprobs 21", "POST", comp, R"({"prompt":"x","logprobs":21})", 400, "logprobs"},
                    {"tool_choice required", "POST", chat, "{" + hello + R"(,"tool_choice":"required"})", 400,
                     "tool_choice"},
                    {"tool_choice named", "POST", chat,
                     "{" + hello + R"(,"tool_choice":{"type":"function","function":{"name":"f"}}})", 400,
                     "tool_choice"},
                    {"tool_choice unknown", "POST", chat, "{" + hello + R"(,"tool_choice":"sometimes"})", 400,
                     "tool_choice"},
                    {"chat_template_kwargs not an object", "POST", chat,
                     "{" + hello + R"(,"chat_template_kwargs":[1]})", 400, "chat_template_kwargs"},
                    {"chat_template_kwargs overriding messages", "POST", chat,
                     "{" + hello + R"(,"chat_template_kwargs":{"messages":[]}})", 400,
                     "chat_template_kwargs.messages"},
                    {"reasoning_effort unknown", "POST", chat, "{" + hello + R"(,"reasoning_effort":"max"})", 400,
                     "reasoning_effort"},
                    {"reasoning_content on a user message", "POST", chat,
                     R"({"messages":[{"role":"user","content":"hi","reasoning_content":"x"}]})", 400,
                     "messages[0].reasoning_content"},
                    {"unknown response_format type", "POST", chat,
                     "{" + hello + R"(,"response_format":{"type":"xml"}})", 400, "response_format.type"},
                    {"unknown field", "POST", chat, "{" + hello + R"(,"frobnicate":1})", 400, "frobnicate"},
                    {"stream_options without stream", "POST", chat,
                     "{" + hello + R"(,"stream_options":{"include_usage":true}})", 400, "stream_options"},
                    {"tools not an array", "POST", chat, "{" + hello + R"(,"tools":{}})", 400, "tools"},
                    {"numeric prompt", "POST", comp, R"({"prompt":5})", 400, "prompt"},
                    {"missing prompt", "POST", comp, R"({"max_tokens":3})", 400, "prompt"},
                    {"messages on completions", "POST", comp, R"({"prompt":"x",)" + hello + "}", 400, "messages"},
                    {"echo on completions", "POST", comp, R"({"prompt":"x","echo":true})", 400, "echo"},
                });
}

TEST(hostile, unknown_routes_wrong_methods_and_oversized_requests_get_404_405_413_431_400) {
    server_process server;
    const std::string big(2 * 1024 * 1024, 'a');
    const std::string big_header(20000, 'b');
    expect_answers(server, {
                               {"unknown route", "GET", "/v2/everything", "", 404, std::nullopt},
                               {"unknown POST route", "POST", "/v1/embeddings", "{}", 404, std::nullopt},
                               {"GET chat", "GET", chat, "", 405, std::nullopt},
                               {"DELETE health", "DELETE", "/health", "", 405, std::nullopt},
                               {"POST models", "POST", "/v1/models", "{}", 405, std::nullopt},
                               {"2 MB body", "POST", chat, big, 413, std::nullopt},
                               {"20 kB header", "GET", "/health", "", 431, std::nullopt, {{"X-Big", big_header}}},
                           });
    // Broken HTTP itself.
    for (const std::string& raw :
         {std::string("HELLO\r\n\r\n"), std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n"),
          std::string("GET /health HTTP/9.9\r\n\r\n")}) {
        SCOPED_TRACE(raw);
        const auto r = send_raw(server.port(), raw);
        EXPECT_EQ(r.status, 400) << r.error;
        EXPECT_EQ(openai_error_problem(r), "");
    }
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

TEST(hostile, api_key_is_required_everywhere_but_health_and_compared_exactly) {
    server_process server({"--api-key", "s3cret-key"});
    expect_answers(
        server,
        {
            {"missing key", "GET", "/v1/models", "", 401, std::nullopt},
            {"wrong key", "GET", "/v1/models", "", 401, std::nullopt, {{"Authorization", "Bearer wrong"}}},
            {"key prefix", "GET", "/v1/models", "", 401, std::nullopt, {{"Authorization", "Bearer s3cret"}}},
            {"key with suffix", "GET", "/v1/models", "", 401, std::nullopt, {{"Authorization", "Bearer s3cret-key2"}}},
            {"basic scheme", "GET", "/v1/models", "", 401, std::nullopt, {{"Authorization", "Basic s3cret-key"}}},
            {"chat without key", "POST", chat, "{" + hello + "}", 401, std::nullopt},
            // Authentication comes before routing: unknown paths and wrong methods say nothing without the key.
            {"unknown path without key", "GET", "/v1/secret-admin", "", 401, std::nullopt},
            {"wrong method without key", "DELETE", chat, "", 401, std::nullopt},
            {"unknown path with key", "GET", "/v1/secret-admin", "", 404, std::nullopt,
             {{"Authorization", "Bearer s3cret-key"}}},
        });
    const auto ok = send_request(server.port(), "GET", "/v1/models", "", {{"Authorization", "Bearer s3cret-key"}});
    EXPECT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

TEST(hostile, slowloris_header_is_cut_off_by_the_read_timeout) {
    namespace asio = boost::asio;
    server_process server({"--timeout", "1s"});
    asio::io_context ioc;
    asio::ip::tcp::socket s(ioc);
    s.connect({asio::ip::make_address("127.0.0.1"), server.port()});
    asio::write(s, asio::buffer(std::string("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")));
    const auto t0 = std::chrono::steady_clock::now();
    boost::system::error_code ec;
    // One byte every 100 ms keeps the connection busy but never finishes the header.
    for (int i = 0; i < 60 && !ec; ++i) {
        asio::write(s, asio::buffer("a", 1), ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (s.available(ec) > 0 || ec) {
            break;
        }
        char probe = 0;
        s.non_blocking(true);
        const auto n = s.receive(asio::buffer(&probe, 1), asio::ip::tcp::socket::message_peek, ec);
        s.non_blocking(false);
        if (ec == asio::error::would_block) {
            ec = {};
        } else if (n == 0 || ec) {
            break; // closed by the server
        }
    }
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(waited, std::chrono::seconds(4)) << "the server kept a trickling header open";
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

} // namespace
} // namespace sluice::test
