// The Messages API's generations under the server's scheduling, over real sockets on the tiny model: a client that
// leaves a stream stops its generation, a full queue is Anthropic's 529 overloaded_error, a shutdown mid-stream
// and an engine failure (a model file truncated under a streaming server) end with an `error` event, and a
// failed whole answer is a 500 api_error.
#include "../cli/scratch.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <future>
#include <regex>
#include <string>
#include <thread>

namespace sluice::test {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using tcp = asio::ip::tcp;

/// Greedy from "Hi", the tiny model writes no end-of-generation token for thousands of tokens: 3000 tokens are
/// seconds of work, ended by max_tokens.
const std::string long_answer =
    R"({"model":"m","max_tokens":3000,"temperature":0,"messages":[{"role":"user","content":"Hi"}])";

/// A streamed /v1/messages request on a socket the test closes itself; returns once the SSE header arrived.
tcp::socket open_stream(asio::io_context& ioc, unsigned short port) {
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    const std::string body = long_answer + R"(,"stream":true})";
    const std::string req = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    asio::write(s, asio::buffer(req));
    std::array<char, 256> head{};
    s.read_some(asio::buffer(head));
    return s;
}

/// The first log match of `pattern` within 3 s (empty on timeout).
std::smatch wait_for_log(server_process& server, const std::regex& pattern, std::string& holder) {
    std::smatch m;
    for (int i = 0; i < 300; ++i) {
        holder = server.log();
        if (std::regex_search(holder, m, pattern)) {
            return m;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return m;
}

/// The payload of the `event: error` of an SSE body (null when there is none).
json::value error_event(const std::string& body) {
    const auto at = body.find("event: error\ndata: ");
    if (at == std::string::npos) {
        return nullptr;
    }
    const auto start = at + 19;
    return json::parse(body.substr(start, body.find("\n\n", start) - start));
}

TEST(messages_lifecycle, a_client_leaving_a_stream_stops_its_generation) {
    server_process server({"--parallel", "1"});
    asio::io_context ioc;
    auto s = open_stream(ioc, server.port());
    s.close();
    std::string log;
    const auto m = wait_for_log(server, std::regex(R"(msg_\w+ messages finish=disconnected .* completion=(\d+))"), log);
    ASSERT_FALSE(m.empty()) << log;
    EXPECT_LT(std::stoi(m[1].str()), 3000) << log;
    const auto next = post_json(server.port(), "/v1/messages",
                                R"({"model":"m","max_tokens":2,"messages":[{"role":"user","content":"Hi"}]})");
    EXPECT_EQ(next.status, 200) << next.body;
}

TEST(messages_lifecycle, a_full_queue_is_a_529_overloaded_error_with_retry_after) {
    server_process server({"--parallel", "1", "--queue", "0"});
    asio::io_context ioc;
    auto busy = open_stream(ioc, server.port());
    const auto r = post_json(server.port(), "/v1/messages",
                             R"({"model":"m","max_tokens":2,"messages":[{"role":"user","content":"Hi"}]})");
    EXPECT_EQ(r.status, 529) << r.body;
    EXPECT_EQ(r.headers.count("retry-after") ? r.headers.at("retry-after") : "", "1");
    const auto v = body_json(r);
    EXPECT_EQ(v.at("type"), "error") << r.body;
    EXPECT_EQ(v.at("error").at("type"), "overloaded_error") << r.body;
    busy.close();
}

TEST(messages_lifecycle, a_shutdown_mid_stream_ends_it_with_an_overloaded_error_event) {
    server_process server({"--shutdown-grace", "300ms"});
    auto streamed = std::async(std::launch::async, [&] {
        return post_json(server.port(), "/v1/messages", long_answer + R"(,"stream":true})");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // tokens are flowing
    server.terminate();
    const auto r = streamed.get();
    ASSERT_EQ(r.status, 200) << r.error;
    const auto e = error_event(r.body);
    ASSERT_TRUE(e.is_object()) << r.body.substr(r.body.size() > 600 ? r.body.size() - 600 : 0);
    EXPECT_EQ(e.at("type"), "error");
    EXPECT_EQ(e.at("error").at("type"), "overloaded_error");
    EXPECT_EQ(r.body.find("event: message_stop"), std::string::npos);
    EXPECT_EQ(server.wait_exit(), 0) << server.log();
    EXPECT_NE(server.log().find("messages finish=shutdown"), std::string::npos) << server.log();
}

TEST(messages_lifecycle, an_engine_failure_is_a_500_api_error_whole_and_an_error_event_streamed) {
    const auto copy = scratch_dir() / "messages-truncated-later.gguf";
    std::filesystem::copy_file(tiny_model(), copy, std::filesystem::copy_options::overwrite_existing);
    const std::vector<std::string> plan_args{"--ctx", "512", "--parallel", "1"};
    auto args = plan_args;
    args.insert(args.end(),
                {"--memory-budget", std::to_string(streaming_budget(plan_args, 4)), "--disk-bandwidth", "1"});
    server_process server(args, copy);
    std::filesystem::resize_file(copy, std::filesystem::file_size(copy) / 2); // most experts are gone
    bool whole_failed = false;
    bool stream_failed = false;
    for (int i = 0; i < 16 && !(whole_failed && stream_failed); ++i) {
        const bool stream = i % 2 == 1;
        const auto r = post_json(server.port(), "/v1/messages",
                                 R"({"model":"m","max_tokens":32,"messages":[{"role":"user","content":"Request )" +
                                     std::to_string(i) + R"("}],"stream":)" + (stream ? "true" : "false") + "}");
        if (!stream && r.status == 500) {
            whole_failed = true;
            const auto v = body_json(r);
            EXPECT_EQ(v.at("type"), "error") << r.body;
            EXPECT_EQ(v.at("error").at("type"), "api_error") << r.body;
        } else if (stream && error_event(r.body).is_object()) {
            stream_failed = true;
            EXPECT_EQ(r.status, 200);
            EXPECT_EQ(error_event(r.body).at("error").at("type"), "api_error") << r.body;
        } else {
            EXPECT_EQ(r.status, 200) << r.body;
        }
    }
    EXPECT_TRUE(whole_failed) << "no whole answer read a lost expert";
    EXPECT_TRUE(stream_failed) << "no stream read a lost expert";
    EXPECT_TRUE(server.running());
}

} // namespace
} // namespace sluice::test
