// `sluice serve` as a process on a real socket: endpoints, response shapes, SSE framing through curl,
// scheduling, disconnects and shutdown.
#include "../cli/process.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <chrono>
#include <csignal>
#include <regex>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace sluice::test {
namespace {

namespace json = boost::json;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

const std::string chat_hello = R"("messages":[{"role":"user","content":"Hello"}])";

json::object parse_object(const http_reply& r) {
    auto v = body_json(r);
    EXPECT_TRUE(v.is_object()) << r.body;
    return v.is_object() ? v.as_object() : json::object{};
}

/// Waits until /health reports no busy slot; false after `limit`.
bool slots_become_idle(unsigned short port, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        const auto h = send_request(port, "GET", "/health");
        if (h.status == 200 && body_json(h).at("slots_busy").as_int64() == 0) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

/// Waits for a log line matching `pattern`; returns its match (empty on timeout).
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

/// A streamed request on a socket that the test closes itself.
tcp::socket open_request(asio::io_context& ioc, unsigned short port, const std::string& body) {
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    asio::write(s, asio::buffer(req));
    return s;
}

TEST(serve, health_reports_the_loaded_model_and_listening_precedes_loading) {
    server_process server;
    const auto r = send_request(server.port(), "GET", "/health");
    ASSERT_EQ(r.status, 200) << r.error;
    const auto o = parse_object(r);
    EXPECT_EQ(o.at("status"), "ok");
    EXPECT_EQ(o.at("model"), "tiny-qwen3moe");
    // The memory plan, as `sluice inspect --plan` prints it: the tiny model fits, so it is resident.
    const auto& memory = o.at("memory").as_object();
    EXPECT_EQ(memory.at("strategy"), "resident");
    EXPECT_GT(memory.at("budget_bytes").to_number<double>(), 0);
    EXPECT_LE(memory.at("planned_bytes").to_number<double>(), memory.at("budget_bytes").to_number<double>());
    EXPECT_EQ(memory.at("cache_slots").to_number<double>(), 0);
    EXPECT_GT(memory.at("kv_bytes").to_number<double>(), 0);
    const auto log = server.log();
    EXPECT_LT(log.find("listening on"), log.find(" loaded in ")) << log;
}

TEST(serve, models_lists_the_served_model) {
    server_process server;
    const auto o = parse_object(send_request(server.port(), "GET", "/v1/models"));
    EXPECT_EQ(o.at("object"), "list");
    ASSERT_EQ(o.at("data").as_array().size(), 1u);
    EXPECT_EQ(o.at("data").at(0).at("id"), "tiny-qwen3moe");
    EXPECT_EQ(o.at("data").at(0).at("object"), "model");
}

TEST(serve, non_streamed_chat_is_an_openai_chat_completion_with_usage_and_timings) {
    server_process server;
    const auto r = post_json(server.port(), "/v1/chat/completions",
                             "{" + chat_hello + R"(,"max_tokens":5,"ignore_eos":true,"seed":3})");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto o = parse_object(r);
    EXPECT_EQ(o.at("object"), "chat.completion");
    EXPECT_EQ(std::string(o.at("id").as_string()).substr(0, 9), "chatcmpl-");
    EXPECT_EQ(o.at("model"), "tiny-qwen3moe");
    const auto& choice = o.at("choices").at(0);
    EXPECT_EQ(choice.at("message").at("role"), "assistant");
    EXPECT_TRUE(choice.at("message").at("content").is_string());
    EXPECT_EQ(choice.at("finish_reason"), "length");
    const auto& usage = o.at("usage");
    EXPECT_EQ(usage.at("completion_tokens").as_int64(), 5);
    EXPECT_GT(usage.at("prompt_tokens").as_int64(), 0);
    EXPECT_EQ(usage.at("total_tokens").as_int64(),
              usage.at("prompt_tokens").as_int64() + usage.at("completion_tokens").as_int64());
    const auto& t = o.at("timings");
    for (const char* key :
         {"prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms", "predicted_per_second"}) {
        EXPECT_TRUE(t.as_object().contains(key)) << key;
    }
    EXPECT_EQ(t.at("predicted_n").as_int64(), 5);
}

TEST(serve, non_streamed_completion_is_an_openai_text_completion) {
    server_process server;
    const auto r = post_json(server.port(), "/v1/completions",
                             R"({"prompt":"Once upon a time","max_tokens":4,"ignore_eos":true})");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto o = parse_object(r);
    EXPECT_EQ(o.at("object"), "text_completion");
    EXPECT_EQ(std::string(o.at("id").as_string()).substr(0, 5), "cmpl-");
    EXPECT_TRUE(o.at("choices").at(0).at("text").is_string());
    EXPECT_EQ(o.at("choices").at(0).at("finish_reason"), "length");
    EXPECT_EQ(o.at("usage").at("completion_tokens").as_int64(), 4);
    EXPECT_EQ(o.at("timings").at("predicted_n").as_int64(), 4);
}

TEST(serve, curl_sse_framing_has_role_first_finish_reason_usage_chunk_and_done_last) {
    server_process server;
    const std::string body =
        "{" + chat_hello +
        R"(,"max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})";
    const auto r = run_process("curl -sN -H 'Content-Type: application/json' -d " + shell_quote(body) + " " +
                               server.base_url() + "/v1/chat/completions");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string& out = r.out;
    ASSERT_GE(out.size(), 14u);
    EXPECT_EQ(out.substr(out.size() - 14), "data: [DONE]\n\n");
    // Split into events: each is exactly "data: <payload>" followed by a blank line.
    std::vector<json::object> chunks;
    std::size_t pos = 0;
    bool done = false;
    while (pos < out.size()) {
        const auto end = out.find("\n\n", pos);
        ASSERT_NE(end, std::string::npos) << "unterminated event at " << pos;
        const std::string event = out.substr(pos, end - pos);
        ASSERT_EQ(event.rfind("data: ", 0), 0u) << event;
        ASSERT_EQ(event.find('\n'), std::string::npos) << event;
        const std::string payload = event.substr(6);
        pos = end + 2;
        ASSERT_FALSE(done) << "an event after [DONE]";
        if (payload == "[DONE]") {
            done = true;
            continue;
        }
        chunks.push_back(json::parse(payload).as_object());
    }
    ASSERT_TRUE(done);
    ASSERT_GE(chunks.size(), 3u);
    const auto id = chunks.front().at("id");
    for (const auto& c : chunks) {
        EXPECT_EQ(c.at("id"), id);
        EXPECT_EQ(c.at("object"), "chat.completion.chunk");
    }
    EXPECT_EQ(chunks.front().at("choices").at(0).at("delta").at("role"), "assistant");
    const auto& finish = chunks[chunks.size() - 2];
    EXPECT_EQ(finish.at("choices").at(0).at("finish_reason"), "length");
    const auto& usage = chunks.back();
    EXPECT_TRUE(usage.at("choices").as_array().empty());
    EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 6);
    EXPECT_EQ(usage.at("timings").at("predicted_n").as_int64(), 6);
    for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
        EXPECT_TRUE(chunks[i].at("usage").is_null()) << "include_usage: every chunk but the last has usage null";
    }
    for (std::size_t i = 1; i + 2 < chunks.size(); ++i) {
        EXPECT_TRUE(chunks[i].at("choices").at(0).at("finish_reason").is_null());
        EXPECT_TRUE(chunks[i].at("choices").at(0).at("delta").at("content").is_string());
    }
}

TEST(serve, streamed_text_equals_non_streamed_text_for_the_same_seed) {
    server_process server;
    const std::string params = R"("max_tokens":12,"ignore_eos":true,"seed":7,"temperature":0.9)";
    const auto whole = post_json(server.port(), "/v1/completions", R"({"prompt":"The sky",)" + params + "}");
    ASSERT_EQ(whole.status, 200) << whole.body;
    const auto streamed =
        post_json(server.port(), "/v1/completions", R"({"prompt":"The sky","stream":true,)" + params + "}");
    ASSERT_EQ(streamed.status, 200);
    EXPECT_EQ(streamed.headers.at("content-type"), "text/event-stream");
    std::string text;
    std::size_t pos = 0;
    while ((pos = streamed.body.find("data: {", pos)) != std::string::npos) {
        const auto end = streamed.body.find("\n\n", pos);
        const auto chunk = json::parse(streamed.body.substr(pos + 6, end - pos - 6));
        text += chunk.at("choices").at(0).at("text").as_string();
        pos = end;
    }
    EXPECT_EQ(text, std::string(body_json(whole).at("choices").at(0).at("text").as_string()));
}

TEST(serve, stop_string_cuts_the_text_before_it_and_finishes_with_stop) {
    server_process server;
    const std::string params = R"("prompt":"The sky","max_tokens":24,"ignore_eos":true,"temperature":0)";
    const auto full = post_json(server.port(), "/v1/completions", "{" + params + "}");
    ASSERT_EQ(full.status, 200) << full.body;
    const std::string text(body_json(full).at("choices").at(0).at("text").as_string());
    // A stop string of two ASCII letters from the middle of the greedy text.
    std::size_t at = 4;
    while (at + 1 < text.size() && !(std::isalpha(static_cast<unsigned char>(text[at])) &&
                                     std::isalpha(static_cast<unsigned char>(text[at + 1])))) {
        ++at;
    }
    ASSERT_LT(at + 1, text.size()) << "no ASCII pair in " << text;
    const std::string stop = text.substr(at, 2);
    const auto cut = post_json(server.port(), "/v1/completions", "{" + params + R"(,"stop":[")" + stop + R"("]})");
    ASSERT_EQ(cut.status, 200) << cut.body;
    const auto o = body_json(cut);
    EXPECT_EQ(std::string(o.at("choices").at(0).at("text").as_string()), text.substr(0, text.find(stop)))
        << "stop " << stop;
    EXPECT_EQ(o.at("choices").at(0).at("finish_reason"), "stop");
}

TEST(serve, prompt_longer_than_the_context_is_400_with_the_counts) {
    server_process server({"--ctx", "32"});
    std::string prompt;
    for (int i = 0; i < 40; ++i) {
        prompt += "word ";
    }
    const auto r = post_json(server.port(), "/v1/completions", R"({"prompt":")" + prompt + R"("})");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(openai_error_problem(r), "");
    const auto o = parse_object(r);
    EXPECT_EQ(o.at("error").at("code"), "context_length_exceeded");
    EXPECT_NE(std::string(o.at("error").at("message").as_string()).find("the context holds 32"), std::string::npos);
}

TEST(serve, full_queue_answers_503_with_retry_after_and_a_closed_stream_frees_its_slot) {
    server_process server({"--parallel", "1", "--queue", "0"});
    asio::io_context ioc;
    auto busy =
        open_request(ioc, server.port(), R"({"prompt":"Hi","max_tokens":3000,"ignore_eos":true,"stream":true})");
    std::array<char, 256> head{};
    busy.read_some(asio::buffer(head)); // the generation has started once the SSE header arrives
    const auto r = post_json(server.port(), "/v1/completions", R"({"prompt":"Hi","max_tokens":2})");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.headers.count("retry-after") ? r.headers.at("retry-after") : "", "1");
    EXPECT_EQ(openai_error_problem(r), "");
    busy.close();
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::milliseconds(3000)));
    std::string log;
    const auto m = wait_for_log(server, std::regex(R"(finish=disconnected .* completion=(\d+))"), log);
    ASSERT_FALSE(m.empty()) << log;
    EXPECT_LT(std::stoi(m[1].str()), 3000) << log;
    EXPECT_EQ(post_json(server.port(), "/v1/completions", R"({"prompt":"Hi","max_tokens":2})").status, 200);
}

TEST(serve, queued_request_is_served_when_the_slot_frees) {
    server_process server({"--parallel", "1", "--queue", "4"});
    asio::io_context ioc;
    auto busy =
        open_request(ioc, server.port(), R"({"prompt":"Hi","max_tokens":3000,"ignore_eos":true,"stream":true})");
    std::array<char, 256> head{};
    busy.read_some(asio::buffer(head));
    http_reply queued;
    std::thread t([&] { queued = post_json(server.port(), "/v1/completions", R"({"prompt":"Hi","max_tokens":2})"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(body_json(send_request(server.port(), "GET", "/health")).at("queued").as_int64(), 1);
    busy.close();
    t.join();
    EXPECT_EQ(queued.status, 200) << queued.body;
}

TEST(serve, two_slots_generate_concurrently_and_both_free_on_disconnect) {
    server_process server({"--parallel", "2", "--queue", "0"});
    asio::io_context ioc;
    const std::string body = R"({"prompt":"Hi","max_tokens":3000,"ignore_eos":true,"stream":true})";
    auto a = open_request(ioc, server.port(), body);
    auto b = open_request(ioc, server.port(), body);
    std::array<char, 256> head{};
    a.read_some(asio::buffer(head));
    b.read_some(asio::buffer(head));
    EXPECT_EQ(body_json(send_request(server.port(), "GET", "/health")).at("slots_busy").as_int64(), 2);
    EXPECT_EQ(post_json(server.port(), "/v1/completions", R"({"prompt":"Hi","max_tokens":2})").status, 503);
    a.close();
    b.close();
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::milliseconds(3000)));
}

TEST(serve, client_that_drops_a_non_streamed_request_cancels_its_generation) {
    server_process server;
    asio::io_context ioc;
    auto s = open_request(ioc, server.port(), R"({"prompt":"Hi","max_tokens":3000,"ignore_eos":true})");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s.close();
    std::string log;
    const auto m = wait_for_log(server, std::regex(R"(finish=cancelled .* completion=(\d+))"), log);
    ASSERT_FALSE(m.empty()) << log;
    EXPECT_LT(std::stoi(m[1].str()), 3000) << log;
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::milliseconds(2000)));
}

TEST(serve, keep_alive_connection_serves_two_requests) {
    server_process server;
    const std::string body = R"({"prompt":"Hi","max_tokens":2})";
    const std::string one =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
        body;
    const std::string two = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    asio::io_context ioc;
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(s, asio::buffer(one + two)); // pipelined
    std::string all;
    boost::system::error_code ec;
    asio::read(s, asio::dynamic_buffer(all), ec);
    EXPECT_EQ(ec, asio::error::eof);
    EXPECT_NE(all.find("text_completion"), std::string::npos) << all;
    EXPECT_NE(all.find("\"status\":\"ok\""), std::string::npos) << all;
}

TEST(serve, tokenize_and_detokenize_round_trip) {
    server_process server;
    const auto t = post_json(server.port(), "/tokenize", R"({"content":"hello world"})");
    ASSERT_EQ(t.status, 200) << t.body;
    const auto tokens = body_json(t).at("tokens");
    EXPECT_FALSE(tokens.as_array().empty());
    const auto d = post_json(server.port(), "/detokenize", json::serialize(json::object{{"tokens", tokens}}));
    ASSERT_EQ(d.status, 200) << d.body;
    EXPECT_EQ(body_json(d).at("content"), "hello world");
}

TEST(serve, sigterm_stops_the_server_with_status_zero) {
    server_process server;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(serve, server_outlives_its_log_pipe_closing) {
    // `sluice serve 2>&1 | reader` whose reader exits: the next log line must not kill the server (SIGPIPE).
    std::array<int, 2> fds{};
    ASSERT_EQ(::pipe(fds.data()), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(fds[1], STDERR_FILENO);
        ::close(fds[0]);
        ::close(fds[1]);
        ::execl(sluice_exe().c_str(), sluice_exe().c_str(), "serve", "-m", tiny_model().c_str(), "--port", "0",
                "--threads", "2", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ASSERT_GT(pid, 0);
    ::close(fds[1]);
    std::string text;
    std::array<char, 4096> buf{};
    while (text.find(" loaded in ") == std::string::npos) {
        const auto n = ::read(fds[0], buf.data(), buf.size());
        if (n <= 0) {
            break;
        }
        text.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fds[0]); // the reader leaves
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(127\.0\.0\.1:(\d+))"))) << text;
    const auto port = static_cast<unsigned short>(std::stoi(m[1].str()));
    const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":3})";
    EXPECT_EQ(post_json(port, "/v1/chat/completions", body).status, 200); // logs a line into the closed pipe
    EXPECT_EQ(post_json(port, "/v1/chat/completions", body).status, 200);
    EXPECT_EQ(send_request(port, "GET", "/health").status, 200);
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

} // namespace
} // namespace sluice::test
