// /v1/ws on a real `sluice serve` process with a Boost.Beast WebSocket client: several requests on one socket,
// cancel, bad messages, closing mid-generation, the API key on the upgrade, and a reader too slow to keep up.
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace sluice::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;
using tcp = asio::ip::tcp;

const std::string long_body = R"({"prompt":"Hi","max_tokens":3000,"ignore_eos":true})";
const std::string short_body = R"({"prompt":"Hi","max_tokens":4,"ignore_eos":true})";

std::string request_message(const std::string& id, const std::string& body,
                            const std::string& endpoint = "completions") {
    return R"({"type":"request","id":")" + id + R"(","endpoint":")" + endpoint + R"(","body":)" + body + "}";
}

/// A blocking client: every read gives up after 10 s (SO_RCVTIMEO), so a missing event fails the test.
class ws_client {
public:
    explicit ws_client(unsigned short port, const std::string& bearer = {}, int rcvbuf = 0) : ws_(ioc_) {
        auto& s = ws_.next_layer();
        s.open(tcp::v4());
        if (rcvbuf > 0) {
            ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        }
        timeval tv{10, 0};
        ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
        if (!bearer.empty()) {
            ws_.set_option(websocket::stream_base::decorator([bearer](websocket::request_type& req) {
                req.set(beast::http::field::authorization, "Bearer " + bearer);
            }));
        }
        ws_.handshake(response_, "127.0.0.1", "/v1/ws", ec_);
        ws_.text(true);
    }

    [[nodiscard]] const boost::system::error_code& handshake_error() const { return ec_; }
    [[nodiscard]] const websocket::response_type& handshake_response() const { return response_; }

    void send(const std::string& text) { ws_.write(asio::buffer(text)); }

    /// The next event, or an empty object when the read failed (error in `last_error()`).
    json::object read() {
        beast::flat_buffer buffer;
        ws_.read(buffer, ec_);
        if (ec_) {
            return {};
        }
        auto v = json::parse(beast::buffers_to_string(buffer.data()));
        EXPECT_TRUE(v.is_object());
        return v.is_object() ? v.as_object() : json::object{};
    }

    /// Reads until a done or error event for `id` (other events are kept in `seen`).
    json::object read_until_end(const std::string& id, std::map<std::string, std::string>& text) {
        for (int i = 0; i < 100000; ++i) {
            auto ev = read();
            if (ev.empty()) {
                ADD_FAILURE() << "read failed: " << ec_.message();
                return {};
            }
            const std::string type(ev.at("type").as_string());
            const std::string evid = ev.contains("id") ? std::string(ev.at("id").as_string()) : std::string();
            if (type == "delta") {
                text[evid] += std::string(ev.at("text").as_string());
            } else if (evid == id) {
                return ev;
            } else {
                others.push_back(ev);
            }
        }
        return {};
    }

    [[nodiscard]] const boost::system::error_code& last_error() const { return ec_; }
    websocket::stream<tcp::socket>& stream() { return ws_; }
    std::vector<json::object> others;

private:
    asio::io_context ioc_;
    websocket::stream<tcp::socket> ws_;
    websocket::response_type response_;
    boost::system::error_code ec_;
};

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

TEST(websocket, two_requests_on_one_socket_both_complete_with_their_own_ids) {
    server_process server({"--parallel", "2"});
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error()) << c.handshake_error().message();
    c.send(request_message("a", short_body));
    c.send(request_message("b", R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":5,"ignore_eos":true})",
                           "chat"));
    std::map<std::string, std::string> text;
    std::map<std::string, json::object> done;
    for (int i = 0; i < 1000 && done.size() < 2; ++i) {
        auto ev = c.read();
        ASSERT_FALSE(ev.empty()) << c.last_error().message();
        const std::string type(ev.at("type").as_string());
        const std::string id(ev.at("id").as_string());
        ASSERT_TRUE(id == "a" || id == "b") << json::serialize(ev);
        if (type == "delta") {
            EXPECT_FALSE(done.contains(id)) << "a delta after done";
            text[id] += std::string(ev.at("text").as_string());
        } else {
            ASSERT_EQ(type, "done") << json::serialize(ev);
            done[id] = ev;
        }
    }
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done["a"].at("finish_reason"), "length");
    EXPECT_EQ(done["b"].at("finish_reason"), "length");
    EXPECT_EQ(done["a"].at("usage").at("completion_tokens").as_int64(), 4);
    EXPECT_EQ(done["b"].at("usage").at("completion_tokens").as_int64(), 5);
    EXPECT_TRUE(done["a"].at("timings").is_object());
    EXPECT_FALSE(text["a"].empty());
}

TEST(websocket, cancel_stops_one_request_while_the_other_completes) {
    server_process server({"--parallel", "2"});
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error());
    c.send(request_message("long", long_body));
    // Wait for the long one to produce, then start the short one and cancel the long one.
    for (;;) {
        auto ev = c.read();
        ASSERT_FALSE(ev.empty()) << c.last_error().message();
        if (ev.at("type") == "delta") {
            break;
        }
    }
    c.send(request_message("short", R"({"prompt":"Hi","max_tokens":6,"ignore_eos":true})"));
    c.send(R"({"type":"cancel","id":"long"})");
    std::map<std::string, std::string> text;
    std::map<std::string, json::object> done;
    for (int i = 0; i < 10000 && done.size() < 2; ++i) {
        auto ev = c.read();
        ASSERT_FALSE(ev.empty()) << c.last_error().message();
        if (ev.at("type") == "done") {
            done[std::string(ev.at("id").as_string())] = ev;
        } else {
            ASSERT_EQ(ev.at("type"), "delta") << json::serialize(ev);
        }
    }
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done["long"].at("finish_reason"), "cancelled");
    EXPECT_LT(done["long"].at("usage").at("completion_tokens").as_int64(), 3000);
    EXPECT_EQ(done["short"].at("finish_reason"), "length");
    EXPECT_EQ(done["short"].at("usage").at("completion_tokens").as_int64(), 6);
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::seconds(5)));
}

TEST(websocket, cancel_of_a_queued_request_ends_it_as_cancelled_without_tokens) {
    server_process server({"--parallel", "1"});
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error());
    c.send(request_message("running", long_body));
    c.send(request_message("queued", long_body));
    c.send(R"({"type":"cancel","id":"queued"})");
    std::map<std::string, std::string> text;
    auto queued = c.read_until_end("queued", text);
    ASSERT_EQ(queued.at("type"), "done") << json::serialize(queued);
    EXPECT_EQ(queued.at("finish_reason"), "cancelled");
    EXPECT_EQ(queued.at("usage").at("completion_tokens").as_int64(), 0);
    EXPECT_TRUE(text["queued"].empty());
    c.send(R"({"type":"cancel","id":"running"})");
    EXPECT_EQ(c.read_until_end("running", text).at("finish_reason"), "cancelled");
    c.send(R"({"type":"cancel","id":"running"})"); // no longer running
    auto unknown = c.read_until_end("running", text);
    ASSERT_EQ(unknown.at("type"), "error");
    EXPECT_EQ(unknown.at("error").at("code"), "unknown_id");
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::seconds(5)));
}

TEST(websocket, invalid_messages_give_error_events_and_the_socket_stays_usable) {
    server_process server;
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error());
    c.send("this is not json");
    auto e1 = c.read();
    ASSERT_EQ(e1.at("type"), "error") << json::serialize(e1);
    EXPECT_FALSE(e1.contains("id"));
    EXPECT_TRUE(e1.at("error").at("message").is_string());
    EXPECT_TRUE(e1.at("error").at("type").is_string());

    c.send(R"({"type":"bogus","id":"x"})");
    auto e2 = c.read();
    ASSERT_EQ(e2.at("type"), "error");
    EXPECT_EQ(e2.at("id"), "x");

    c.send(request_message("bad", R"({"prompt":"Hi","max_tokens":-3})"));
    auto e3 = c.read();
    ASSERT_EQ(e3.at("type"), "error") << json::serialize(e3);
    EXPECT_EQ(e3.at("id"), "bad");
    EXPECT_EQ(e3.at("error").at("param"), "max_tokens");

    c.send(request_message("unknown-field", R"({"prompt":"Hi","frobnicate":1})"));
    auto e4 = c.read();
    ASSERT_EQ(e4.at("type"), "error");
    EXPECT_EQ(e4.at("error").at("param"), "frobnicate");

    // Deltas here are one choice's plain text: n > 1 and logprobs are for the REST routes.
    c.send(request_message("two", R"({"prompt":"Hi","n":2})"));
    auto e6 = c.read();
    ASSERT_EQ(e6.at("type"), "error") << json::serialize(e6);
    EXPECT_EQ(e6.at("error").at("param"), "body.n");
    c.send(request_message("lp", R"({"prompt":"Hi","logprobs":1})"));
    auto e7 = c.read();
    ASSERT_EQ(e7.at("type"), "error") << json::serialize(e7);
    EXPECT_EQ(e7.at("error").at("param"), "body.logprobs");

    c.send(request_message("dup", long_body));
    c.send(request_message("dup", short_body));
    std::map<std::string, std::string> text;
    auto e5 = c.read_until_end("dup", text);
    ASSERT_EQ(e5.at("type"), "error") << json::serialize(e5);
    EXPECT_EQ(e5.at("error").at("code"), "duplicate_id");
    c.send(R"({"type":"cancel","id":"dup"})");
    auto d5 = c.read_until_end("dup", text);
    EXPECT_EQ(d5.at("finish_reason"), "cancelled");

    c.send(request_message("ok", short_body));
    auto done = c.read_until_end("ok", text);
    ASSERT_EQ(done.at("type"), "done") << json::serialize(done);
    EXPECT_EQ(done.at("finish_reason"), "length");
}

TEST(websocket, a_grammar_in_the_body_restricts_the_streamed_text_and_a_bad_one_is_an_error_event) {
    server_process server;
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error());
    c.send(request_message("g", R"({"prompt":"What is 478 + 356?","max_tokens":20,"grammar":"root ::= [0-9]{1,4} \".\""})"));
    std::map<std::string, std::string> text;
    auto done = c.read_until_end("g", text);
    ASSERT_EQ(done.at("type"), "done") << json::serialize(done);
    EXPECT_EQ(done.at("finish_reason"), "stop");
    ASSERT_GE(text["g"].size(), 2U);
    EXPECT_EQ(text["g"].back(), '.');
    EXPECT_EQ(text["g"].find_first_not_of("0123456789"), text["g"].size() - 1) << text["g"];
    c.send(request_message("bad", R"({"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","format":"date","pattern":"x"}}}})", "chat"));
    auto e = c.read_until_end("bad", text);
    ASSERT_EQ(e.at("type"), "error") << json::serialize(e);
    EXPECT_EQ(e.at("error").at("param"), "response_format.json_schema.schema");
}

TEST(websocket, closing_the_socket_mid_generation_frees_the_slot) {
    server_process server({"--parallel", "1", "--queue", "0"});
    {
        ws_client c(server.port());
        ASSERT_FALSE(c.handshake_error());
        c.send(request_message("a", long_body));
        c.send(request_message("b", long_body)); // queue 0: an error event, code server_busy
        bool delta = false;
        bool busy = false;
        for (int i = 0; i < 1000 && !(delta && busy); ++i) {
            auto ev = c.read();
            ASSERT_FALSE(ev.empty());
            if (ev.at("type") == "delta") {
                delta = true;
            } else if (ev.at("type") == "error") {
                EXPECT_EQ(ev.at("id"), "b");
                EXPECT_EQ(ev.at("error").at("code"), "server_busy");
                busy = true;
            }
        }
        EXPECT_TRUE(delta && busy);
        boost::system::error_code ec;
        c.stream().next_layer().close(ec); // abrupt: no close frame
    }
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::seconds(5)));
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
    ws_client next(server.port());
    ASSERT_FALSE(next.handshake_error());
    next.send(request_message("c", short_body));
    std::map<std::string, std::string> text;
    auto done = next.read_until_end("c", text);
    EXPECT_EQ(done.at("finish_reason"), "length");
    next.stream().close(websocket::close_code::normal);
}

TEST(websocket, sigterm_mid_generation_ends_requests_with_shutdown_and_closes_with_1001) {
    server_process server({"--parallel", "2", "--shutdown-grace", "300ms", "--ctx", "8192"});
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error());
    const std::string endless = R"({"prompt":"Hi","max_tokens":7000,"ignore_eos":true})";
    c.send(request_message("a", endless));
    c.send(request_message("b", endless));
    auto ev = c.read();
    ASSERT_EQ(ev.at("type"), "delta");
    server.terminate();
    // Both requests end with a done event (in either order), then the close frame: 1001, going away.
    std::map<std::string, std::string> finish;
    for (int i = 0; i < 100000 && !c.last_error(); ++i) {
        const auto e = c.read();
        if (!e.empty() && e.at("type") == "done") {
            finish[std::string(e.at("id").as_string())] = std::string(e.at("finish_reason").as_string());
        }
    }
    EXPECT_EQ(finish["a"], "shutdown");
    EXPECT_EQ(finish["b"], "shutdown");
    EXPECT_EQ(c.last_error(), websocket::error::closed) << c.last_error().message();
    EXPECT_EQ(c.stream().reason().code, websocket::close_code::going_away);
    EXPECT_EQ(server.wait_exit(), 0) << server.log();
}

TEST(websocket, the_upgrade_needs_the_api_key) {
    server_process server({"--api-key", "sekret"});
    ws_client denied(server.port());
    EXPECT_TRUE(denied.handshake_error());
    EXPECT_EQ(denied.handshake_response().result_int(), 401u);
    ws_client wrong(server.port(), "nope");
    EXPECT_TRUE(wrong.handshake_error());
    ws_client allowed(server.port(), "sekret");
    ASSERT_FALSE(allowed.handshake_error()) << allowed.handshake_error().message();
    allowed.send(request_message("a", short_body));
    std::map<std::string, std::string> text;
    EXPECT_EQ(allowed.read_until_end("a", text).at("finish_reason"), "length");
    EXPECT_EQ(send_request(server.port(), "GET", "/v1/ws", {}, {{"Authorization", "Bearer sekret"}}).status, 426);
}

TEST(websocket, refused_handshakes_answer_openai_shaped_json) {
    server_process server;
    const std::string head = "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n";
    const auto r1 = send_raw(server.port(), head + "Sec-WebSocket-Version: 13\r\n\r\n");
    EXPECT_EQ(r1.status, 400) << r1.body;
    EXPECT_EQ(openai_error_problem(r1), "") << r1.body;
    EXPECT_EQ(body_json(r1).at("error").at("code"), "bad_websocket_handshake") << r1.body;

    const auto r2 =
        send_raw(server.port(), head + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n");
    EXPECT_EQ(r2.status, 426) << r2.body;
    EXPECT_EQ(openai_error_problem(r2), "") << r2.body;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

TEST(websocket, a_template_error_is_an_error_event_and_a_slow_render_blocks_nobody) {
    // A template that loops until its 1.5 s time limit; its render runs beside the event loop.
    const auto model = tiny_model_with_template(
        "ws-endless", "{% set r = range(1000000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}");
    server_process server({"--template-max-time-ms", "1500", "--template-max-steps", "1000000000000",
                           "--template-max-bytes", "1099511627776"},
                          model);
    ws_client c(server.port());
    ws_client other(server.port());
    ASSERT_FALSE(c.handshake_error());
    ASSERT_FALSE(other.handshake_error());
    const auto t0 = std::chrono::steady_clock::now();
    c.send(request_message("slow", R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":2})", "chat"));
    other.send(request_message("plain", short_body));
    std::map<std::string, std::string> text;
    // Another socket's completion ends while the chat request's template is still rendering.
    EXPECT_EQ(other.read_until_end("plain", text).at("finish_reason"), "length");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
    const auto err = c.read_until_end("slow", text);
    ASSERT_EQ(err.at("type"), "error") << json::serialize(err);
    EXPECT_EQ(err.at("error").at("code"), "template_error") << json::serialize(err);
}

TEST(websocket, an_oversized_message_is_closed_with_1009_and_the_server_stays_healthy) {
    server_process server;
    ws_client c(server.port());
    ASSERT_FALSE(c.handshake_error());
    const std::string huge = request_message("big", R"({"prompt":")" + std::string(10 << 20, 'a') + R"("})");
    boost::system::error_code wec;
    c.stream().write(asio::buffer(huge), wec);
    EXPECT_FALSE(wec) << "the server dropped the connection instead of closing it: " << wec.message();
    auto ev = c.read();
    EXPECT_TRUE(ev.empty());
    EXPECT_EQ(c.last_error(), websocket::error::closed) << c.last_error().message();
    EXPECT_EQ(c.stream().reason().code, websocket::close_code::too_big);
    ws_client next(server.port());
    ASSERT_FALSE(next.handshake_error());
    next.send(request_message("ok", short_body));
    std::map<std::string, std::string> text;
    EXPECT_EQ(next.read_until_end("ok", text).at("finish_reason"), "length");
}

TEST(websocket, a_reader_that_never_reads_is_closed_and_the_server_stays_healthy) {
    server_process server({"--parallel", "4"});
    ws_client slow(server.port(), {}, 4096);
    ASSERT_FALSE(slow.handshake_error());
    // Long ids make every delta about 2 KiB, so the kernel's socket buffers fill within a few thousand tokens.
    for (const char* id : {"s1", "s2", "s3", "s4"}) {
        slow.send(request_message(std::string(2000, 'x') + id, long_body));
    }
    // Never read: the server's queue fills and it drops the socket; meanwhile it answers others.
    bool closed = false;
    for (int i = 0; i < 600 && !closed; ++i) {
        EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
        closed = server.log().find("websocket write queue full") != std::string::npos;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(closed) << server.log();
    EXPECT_TRUE(slots_become_idle(server.port(), std::chrono::seconds(10)));
    // All four generations were stopped, none ran to max_tokens.
    const std::string log = server.log();
    EXPECT_EQ(log.find("finish=length"), std::string::npos) << log;
    EXPECT_EQ(post_json(server.port(), "/v1/completions", short_body).status, 200);
}

} // namespace
} // namespace sluice::test
