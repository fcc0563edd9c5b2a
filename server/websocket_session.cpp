// The /v1/ws session: one reader loop, one writer coroutine draining a bounded queue (one outstanding write),
// and one coroutine per request, each cancellable on its own through a cancellation signal.
#include "server/websocket_session.hpp"

#include "base/async_event.hpp"
#include "server/api_error.hpp"
#include "server/openai_request.hpp"
#include "server/openai_response.hpp"
#include "server/prompt.hpp"
#include "server/structured_output.hpp"
#include "server/websocket_message.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <variant>

namespace sluice::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace websocket = beast::websocket;

constexpr std::size_t max_queued_messages = 256;
constexpr std::size_t max_queued_bytes = 4 * 1024 * 1024;
constexpr std::size_t max_message_bytes = 4 * 1024 * 1024;
/// How long an overflowed socket gets to take its close frame before the TCP connection is dropped.
constexpr auto overflow_grace = std::chrono::seconds(2);

/// What the reader, the writer and the request coroutines of one socket share (io_context thread only).
struct ws_connection : std::enable_shared_from_this<ws_connection> {
    ws_connection(beast::tcp_stream stream, server_state& state)
        : ws(std::move(stream)), wake(ws.get_executor()), children_done(ws.get_executor()),
          admitted(ws.get_executor()), ended(ws.get_executor()), st(state) {}

    websocket::stream<beast::tcp_stream> ws;
    std::deque<std::string> queue;
    std::size_t queued_bytes = 0;
    async_event wake;          ///< set when the queue or `closing` changed; the writer waits on it
    async_event children_done; ///< set when a child ended; the session waits on it until none is left
    async_event admitted;      ///< notified when next_admit moves
    std::uint64_t next_ticket = 0; ///< given to each request message in the order they arrive
    std::uint64_t next_admit = 0;  ///< the ticket whose turn it is to queue for a slot
    std::size_t children = 0;         ///< the writer and the running requests
    bool closing = false;             ///< no more events are queued
    bool overflowed = false;          ///< a slow reader filled the queue: close with 1008
    bool draining = false;            ///< the server is stopping: new requests are refused
    bool shutdown_cancel = false;     ///< the running requests were stopped by the shutdown
    async_event ended;                ///< set when the reader ends (the socket is done)
    std::map<std::string, std::shared_ptr<asio::cancellation_signal>> active; ///< client id -> its cancel
    server_state& st;

    void cancel_all() {
        for (auto& [id, sig] : active) {
            sig->emit(asio::cancellation_type::terminal);
        }
    }

    /// Queues one event; on overflow drops the queue, cancels everything and schedules the 1008 close.
    void send(const json::object& event) {
        if (closing) {
            return;
        }
        std::string text = json::serialize(event);
        if (queue.size() + 1 > max_queued_messages || queued_bytes + text.size() > max_queued_bytes) {
            std::fprintf(stderr, "sluice serve: websocket write queue full (%zu messages, %zu bytes); closing\n",
                         queue.size(), queued_bytes);
            overflowed = true;
            closing = true;
            queue.clear();
            queued_bytes = 0;
            cancel_all();
            wake.set();
            // A pending write may never finish (the peer does not read): drop the connection after a grace.
            auto guard = std::make_shared<asio::steady_timer>(ws.get_executor(), overflow_grace);
            guard->async_wait([self = shared_from_this(), guard](const boost::system::error_code&) {
                beast::get_lowest_layer(self->ws).close();
            });
            return;
        }
        queued_bytes += text.size();
        queue.push_back(std::move(text));
        wake.set();
    }

    void child_ended() {
        --children;
        children_done.set();
    }
};

json::object error_event(const std::string* id, const api_error& e) {
    json::object ev;
    ev["type"] = "error";
    if (id != nullptr) {
        ev["id"] = *id;
    }
    ev["error"] = error_body(e).at("error");
    return ev;
}

/// Sends queued events one at a time; after an overflow, sends the 1008 close (send() drops the TCP
/// connection if the peer has not taken it within overflow_grace).
asio::awaitable<void> write_loop(std::shared_ptr<ws_connection> c) {
    co_await asio::this_coro::throw_if_cancelled(false);
    for (;;) {
        while (c->queue.empty() && !c->closing) {
            c->wake.reset();
            auto [wec] = co_await c->wake.async_wait(asio::as_tuple(asio::use_awaitable));
            (void)wec; // the queue or `closing` changed
        }
        if (c->queue.empty() || c->overflowed) {
            break;
        }
        std::string msg = std::move(c->queue.front());
        c->queue.pop_front();
        c->queued_bytes -= msg.size();
        auto [ec, n] = co_await c->ws.async_write(asio::buffer(msg), asio::as_tuple(asio::use_awaitable));
        if (ec) {
            c->closing = true;
            c->queue.clear();
            c->queued_bytes = 0;
            c->cancel_all();
            break;
        }
    }
    if (c->overflowed) {
        const websocket::close_reason reason(websocket::close_code::policy_error, "write queue full");
        auto [ec] = co_await c->ws.async_close(reason, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            beast::get_lowest_layer(c->ws).close();
        }
    }
    c->child_ended();
}

/// The done event; a generation the shutdown stopped ends with finish_reason "shutdown".
json::object done_event(const std::string& id, const response_meta& meta, const generation_summary& s,
                        bool shutdown = false) {
    json::object ev;
    ev["type"] = "done";
    ev["id"] = id;
    ev["response_id"] = meta.id;
    ev["finish_reason"] = shutdown && s.reason == finish_reason::cancelled ? std::string_view("shutdown")
                                                                           : finish_reason_name(s.reason);
    ev["usage"] = usage_json(s);
    ev["timings"] = timings_json(s);
    return ev;
}

/// A slot, or none when the request was cancelled already: a cancel that came while the template rendered
/// (the render ignores it) is seen here instead of by the wait for a slot.
asio::awaitable<acquire_result> acquire_unless_cancelled(scheduler& slots) {
    const auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) {
        co_return acquire_result{};
    }
    co_return co_await slots.acquire();
}

/// One request: a slot (queued like REST requests), then delta events and one done (or error) event.
asio::awaitable<void> run_request(std::shared_ptr<ws_connection> c, std::string id, std::uint64_t ticket,
                                  completion_request creq, response_meta meta) {
    co_await asio::this_coro::throw_if_cancelled(false);
    server_state& st = c->st;
    token_clock clock(st.metrics, token_clock::clock::now());
    auto prompt = co_await prompt_tokens_for(st, creq);
    // Renders run in parallel on the render pool; a socket's requests still queue for slots in the order they
    // were sent: each waits for its turn, then lets the next one go.
    while (c->next_admit != ticket) {
        auto [wec] = co_await c->admitted.async_wait(asio::as_tuple(asio::use_awaitable));
        (void)wec; // woken by an earlier request's turn ending
    }
    ++c->next_admit;
    c->admitted.notify_all();
    std::optional<api_error> refused;
    if (!prompt) {
        refused = prompt.error();
    } else {
        refused = apply_tool_choice(creq, output_reading_for(*st.loaded, creq, *prompt));
    }
    if (refused) {
        c->send(error_event(&id, *refused));
        c->active.erase(id);
        c->child_ended();
        co_return;
    }
    creq.generate.prompt_tokens = std::move(*prompt);
    auto acquired = co_await acquire_unless_cancelled(st.slots);
    if (acquired.queue_full) {
        const std::string msg = "all " + std::to_string(st.slots.parallel()) +
                                " generation slots are busy and the queue is full; retry later";
        const api_error e{http::status::service_unavailable, msg, "unavailable_error", std::nullopt, "server_busy"};
        c->send(error_event(&id, e));
    } else if (!acquired.lease) {
        generation_summary none;
        none.reason = finish_reason::cancelled;
        c->send(done_event(id, meta, none, c->shutdown_cancel));
    } else {
        auto tokens = acquired.lease->sess().generate(std::move(creq.generate));
        bool failed = false;
        bool dropped = false; // the socket is closing: nobody will read more, so stop pulling tokens
        for (;;) {
            if (c->closing) {
                dropped = true;
                break;
            }
            auto ev = co_await tokens.next();
            if (!ev) {
                const api_error e{http::status::internal_server_error, ev.error().message, "server_error"};
                c->send(error_event(&id, e));
                failed = true;
                break;
            }
            if (!*ev) {
                break;
            }
            if ((*ev)->token >= 0) {
                clock.on_token();
            }
            if (!(*ev)->text.empty()) {
                json::object delta;
                delta["type"] = "delta";
                delta["id"] = id;
                delta["text"] = (*ev)->text;
                c->send(delta);
            }
        }
        const auto& s = tokens.summary();
        const std::string how = failed ? "error" : dropped ? "disconnected" : std::string(finish_reason_name(s.reason));
        std::fprintf(stderr, "sluice serve: %s websocket %s finish=%s prompt=%u cached=%u completion=%u\n",
                     meta.id.c_str(), meta.kind == completion_kind::chat ? "chat" : "completion", how.c_str(),
                     s.prompt_tokens, s.cached_tokens, s.completion_tokens);
        if (!failed) {
            c->send(done_event(id, meta, s, c->shutdown_cancel));
        }
        st.metrics.prompt_tokens += s.prompt_tokens;
        st.metrics.generated_tokens += s.completion_tokens;
    }
    c->active.erase(id);
    c->child_ended();
}

/// Handles one text message from the client.
void handle_message(const std::shared_ptr<ws_connection>& c, std::string_view text) {
    ws_message msg = parse_ws_message(text, c->st.seeds());
    if (auto* bad = std::get_if<ws_message_error>(&msg)) {
        c->send(error_event(bad->id ? &*bad->id : nullptr, bad->error));
        return;
    }
    if (auto* cancel = std::get_if<ws_cancel>(&msg)) {
        if (auto it = c->active.find(cancel->id); it != c->active.end()) {
            it->second->emit(asio::cancellation_type::terminal);
        } else {
            c->send(error_event(&cancel->id, bad_request("no running request has id '" + cancel->id + "'", "id",
                                                         "unknown_id")));
        }
        return;
    }
    auto& req = std::get<ws_request>(msg);
    const std::string& id = req.id;
    if (c->draining) {
        c->send(error_event(&id, shutdown_error()));
        return;
    }
    if (c->active.contains(id)) {
        c->send(error_event(&id, bad_request("a request with id '" + id + "' is still running", "id", "duplicate_id")));
        return;
    }
    const completion_kind kind = req.request.kind;
    response_meta meta{
        kind, make_response_id(kind), c->st.model_name,
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
        false};
    auto sig = std::make_shared<asio::cancellation_signal>();
    c->active.emplace(id, sig);
    ++c->children;
    asio::co_spawn(c->ws.get_executor(), run_request(c, id, c->next_ticket++, std::move(req.request), std::move(meta)),
                   asio::bind_cancellation_slot(sig->slot(), asio::detached));
}

/// Reads one message into `buffer`, or stops with `too_big` set once it holds more than max_message_bytes.
/// Beast's own read_message_max is not used: when it trips, Beast's teardown can close the socket while the
/// peer is still sending the rest of the message, which resets the connection before the peer reads the
/// 1009 close frame.
asio::awaitable<boost::system::error_code> read_bounded(websocket::stream<beast::tcp_stream>& ws,
                                                        beast::flat_buffer& buffer, bool& too_big) {
    do {
        auto [ec, n] = co_await ws.async_read_some(buffer, 64 * 1024, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            co_return ec;
        }
        if (buffer.size() > max_message_bytes) {
            too_big = true;
            co_return boost::system::error_code{};
        }
    } while (!ws.is_message_done());
    co_return boost::system::error_code{};
}

/// The close handshake with 1009 (message too big): Beast sends the close frame, then discards what the peer
/// still sends of its message until the peer's close frame. A peer that never answers is dropped after a grace.
asio::awaitable<void> close_too_big(ws_connection& c) {
    std::fprintf(stderr, "sluice serve: websocket message larger than %zu bytes; closing with 1009\n",
                 max_message_bytes);
    asio::steady_timer guard(c.ws.get_executor(), std::chrono::seconds(5));
    guard.async_wait([self = c.shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) {
            beast::get_lowest_layer(self->ws).close();
        }
    });
    const websocket::close_reason reason(websocket::close_code::too_big,
                                         "message larger than " + std::to_string(max_message_bytes) + " bytes");
    auto [ec] = co_await c.ws.async_close(reason, asio::as_tuple(asio::use_awaitable));
    (void)ec; // the connection is closed below either way
    guard.cancel();
}

/// Sleeps in steps of 20 ms while `busy()` holds and the clock is before `until`.
template <class Pred>
asio::awaitable<void> wait_while(ws_connection& c, Pred busy, std::chrono::steady_clock::time_point until) {
    asio::steady_timer tick(c.ws.get_executor());
    while (busy() && std::chrono::steady_clock::now() < until) {
        tick.expires_after(std::chrono::milliseconds(20));
        co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

/// The server's shutdown, for one socket: new requests are refused, running ones may finish until the
/// deadline and are then stopped (done with finish_reason "shutdown"), every queued event is written, and the
/// socket is closed with 1001 (going away). Ends at once when the socket ends first.
asio::awaitable<void> drain_on_shutdown(std::shared_ptr<ws_connection> c) {
    using namespace asio::experimental::awaitable_operators;
    co_await asio::this_coro::throw_if_cancelled(false);
    auto stop = c->st.stop_requested.async_wait(asio::as_tuple(asio::use_awaitable));
    auto ended = c->ended.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await (std::move(stop) || std::move(ended));
    if (c->closing) {
        co_return;
    }
    c->draining = true;
    const auto deadline = c->st.stop_deadline;
    co_await wait_while(*c, [&c] { return !c->active.empty() && !c->closing; }, deadline);
    if (!c->active.empty() && !c->closing) {
        c->shutdown_cancel = true;
        c->cancel_all();
        const auto soon = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        co_await wait_while(*c, [&c] { return !c->active.empty() && !c->closing; }, soon);
    }
    const auto flush_by = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    co_await wait_while(*c, [&c] { return !c->queue.empty() && !c->closing; }, flush_by);
    if (c->closing) {
        co_return;
    }
    const websocket::close_reason reason(websocket::close_code::going_away, "server shutting down");
    auto [ec] = co_await c->ws.async_close(reason, asio::as_tuple(asio::use_awaitable));
    (void)ec; // the reader sees the socket end either way
}

} // namespace

asio::awaitable<void> do_websocket_session(beast::tcp_stream stream, http::request<http::string_body> req,
                                           server_state& st) {
    co_await asio::this_coro::throw_if_cancelled(false);
    stream.expires_never(); // the websocket's own timeouts (with pings) take over
    auto c = std::make_shared<ws_connection>(std::move(stream), st);
    c->ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    // Beast answers a handshake it refuses (no Sec-WebSocket-Key, a version other than 13, ...) with its own
    // plain-text body; the decorator runs on that response too and makes it the OpenAI-shaped JSON every other
    // error has, keeping Beast's status and headers (426 keeps Sec-WebSocket-Version).
    auto refused_status = std::make_shared<unsigned>(0);
    c->ws.set_option(websocket::stream_base::decorator([refused_status](websocket::response_type& res) {
        res.set(http::field::server, "sluice");
        if (res.result() == http::status::switching_protocols) {
            return;
        }
        *refused_status = res.result_int();
        const api_error e{res.result(), "WebSocket handshake refused: " + res.body(), "invalid_request_error",
                          std::nullopt, "bad_websocket_handshake"};
        res.body() = json::serialize(error_body(e));
        res.set(http::field::content_type, "application/json");
        res.prepare_payload();
    }));
    c->ws.read_message_max(0); // read_bounded enforces max_message_bytes
    c->ws.text(true);
    auto [aec] = co_await c->ws.async_accept(req, asio::as_tuple(asio::use_awaitable));
    if (aec) {
        if (*refused_status != 0) {
            st.metrics.count_request("/v1/ws", *refused_status);
        }
        co_return;
    }
    st.metrics.count_request("/v1/ws", 101);
    ++c->children;
    asio::co_spawn(c->ws.get_executor(), write_loop(c), asio::detached);
    asio::co_spawn(c->ws.get_executor(), drain_on_shutdown(c), asio::detached);

    beast::flat_buffer buffer;
    bool too_big = false;
    while (!c->overflowed) {
        auto ec = co_await read_bounded(c->ws, buffer, too_big);
        if (ec || too_big) {
            break; // closed by the peer, a timeout, an overflow close, shutdown, or a message over the limit
        }
        if (!c->ws.got_text()) {
            c->send(error_event(nullptr, bad_request("messages must be JSON text frames", std::nullopt, "binary")));
        } else {
            const std::string text = beast::buffers_to_string(buffer.data());
            handle_message(c, text);
        }
        buffer.consume(buffer.size());
    }
    // The socket is done (the peer closed or left, a timeout, an overflow, or shutdown): nothing more can be
    // delivered, so drop the connection (which aborts a write stuck on a peer that does not read), stop every
    // generation and the writer, then wait for them (they hold slots and share the stream).
    c->closing = true;
    c->ended.set();
    c->cancel_all();
    c->wake.set();
    if (too_big && !c->overflowed) {
        co_await close_too_big(*c);
    }
    beast::get_lowest_layer(c->ws).close();
    while (c->children > 0) {
        c->children_done.reset();
        auto [wec] = co_await c->children_done.async_wait(asio::as_tuple(asio::use_awaitable));
        (void)wec; // woken by child_ended()
    }
}

} // namespace sluice::server
