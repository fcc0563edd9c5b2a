// The per-connection coroutine and the route table.
#include "server/http_session.hpp"

#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/speculative.hpp"

#include "server/anthropic_response.hpp"
#include "server/api_error.hpp"
#include "server/completion_handler.hpp"
#include "server/info_handlers.hpp"
#include "server/messages_handler.hpp"
#include "server/websocket_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <algorithm>
#include <array>
#include <optional>

namespace sluice::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::string_view websocket_path = "/v1/ws";

enum class endpoint { health, metrics, models, chat, completions, messages, count_tokens, tokenize, detokenize };

struct route {
    std::string_view path;
    http::verb method;
    endpoint target;
};

constexpr std::array<route, 9> routes{{
    {"/health", http::verb::get, endpoint::health},
    {"/metrics", http::verb::get, endpoint::metrics},
    {"/v1/models", http::verb::get, endpoint::models},
    {"/v1/chat/completions", http::verb::post, endpoint::chat},
    {"/v1/completions", http::verb::post, endpoint::completions},
    {"/v1/messages", http::verb::post, endpoint::messages},
    {"/v1/messages/count_tokens", http::verb::post, endpoint::count_tokens},
    {"/tokenize", http::verb::post, endpoint::tokenize},
    {"/detokenize", http::verb::post, endpoint::detokenize},
}};

/// The route's path, or "unmatched" (so a scan of random URLs cannot grow the label set).
std::string_view route_label(const http_request& req) {
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    for (const auto& r : routes) {
        if (r.path == path) {
            return r.path;
        }
    }
    return "unmatched";
}

/// GET /metrics: the Prometheus text exposition (also while the model loads).
http_response metrics_response(const http_request& req, const server_state& st) {
    server_metrics::sampled now;
    if (st.slots.ready()) {
        now.queued = st.slots.queued();
        now.kv_cache_tokens = st.slots.tokens_held();
    }
    if (st.loaded) {
        now.model_resident_bytes = st.loaded->resident_bytes();
        now.memory_budget_bytes = st.loaded->plan().budget;
        now.streams_experts = st.loaded->plan().streams();
        now.experts = st.loaded->expert_counters();
        const auto& spec = st.loaded->speculation();
        const auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
        now.speculation = {get(spec.verify_steps),        get(spec.drafted),      get(spec.accepted),
                           get(spec.verify_tokens),       get(spec.verify_expert_reads), get(spec.plain_tokens),
                           get(spec.plain_expert_reads)};
        const auto b = st.loaded->batch()->counters();
        now.batch = {b.steps,         b.tokens,   b.sequence_rows,   b.prefill_steps,  b.prefill_tokens,       b.step_s,
                     b.expert_wait_s, b.gather_s, b.prefill_queue_s, b.prefill_step_s, b.prefill_expert_wait_s};
    }
    http_response res{http::status::ok, req.version()};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, metrics_content_type);
    res.keep_alive(req.keep_alive());
    res.body() = st.metrics.render(now);
    res.prepare_payload();
    return res;
}

/// Compares in time that depends only on the lengths, so the key cannot be guessed byte by byte.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned diff = a.size() == b.size() ? 0u : 1u;
    const std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
        const auto x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0u;
        const auto y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0u;
        diff |= x ^ y;
    }
    return diff == 0;
}

/// Null when authorized, else the 401 to answer.
std::optional<api_error> check_api_key(const http_request& req, const server_state& st) {
    if (st.options.api_key.empty()) {
        return std::nullopt;
    }
    // Anthropic's clients send the key as x-api-key.
    if (const auto key = req.find("x-api-key"); key != req.end()) {
        if (!same_secret(key->value(), st.options.api_key)) {
            return api_error{http::status::unauthorized, "Incorrect API key provided", "authentication_error",
                             std::nullopt, "invalid_api_key"};
        }
        return std::nullopt;
    }
    const auto it = req.find(http::field::authorization);
    if (it == req.end()) {
        return api_error{http::status::unauthorized,
                         "Missing API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
                         "authentication_error", std::nullopt, "invalid_api_key"};
    }
    const std::string_view value = it->value();
    constexpr std::string_view scheme = "bearer ";
    if (value.size() < scheme.size() || !beast::iequals(value.substr(0, scheme.size()), scheme) ||
        !same_secret(value.substr(scheme.size()), st.options.api_key)) {
        return api_error{http::status::unauthorized, "Incorrect API key provided", "authentication_error", std::nullopt,
                         "invalid_api_key"};
    }
    return std::nullopt;
}

/// `e` as the client of `path` expects it: Anthropic's shape on the Messages API, OpenAI's elsewhere.
http_response error_for(std::string_view path, const api_error& e, const http_request& req) {
    return is_messages_path(path) ? anthropic_error_response(e, req.version(), req.keep_alive())
                                  : error_response(e, req.version(), req.keep_alive());
}

/// Routes one complete request and writes its answer; returns whether the connection stays open.
asio::awaitable<bool> handle_request(beast::tcp_stream& stream, const http_request& req, server_state& st) {
    const auto timeout = st.options.timeout;
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    const route* found = nullptr;
    for (const auto& r : routes) {
        if (r.path == path) {
            found = &r;
            break;
        }
    }
    // Responses are built into named values before each co_await: GCC 12 mishandles temporaries with
    // non-trivial destructors inside co_await expressions.
    // With --api-key, everything but /health is authenticated before it is routed: an unauthenticated client
    // learns nothing about which paths and methods exist.
    const bool open_route = found != nullptr && found->target == endpoint::health;
    if (!open_route) {
        if (auto denied = check_api_key(req, st)) {
            auto res = error_for(path, *denied, req);
            res.set(http::field::www_authenticate, "Bearer");
            co_return co_await write_response(stream, std::move(res), timeout);
        }
    }
    if (found == nullptr) {
        const api_error e{http::status::not_found,
                          "Invalid URL (" + std::string(req.method_string()) + " " + std::string(path) + ")",
                          "invalid_request_error", std::nullopt, "unknown_url"};
        auto res = error_for(path, e, req);
        co_return co_await write_response(stream, std::move(res), timeout);
    }
    if (req.method() != found->method) {
        auto res = error_for(path,
                             api_error{http::status::method_not_allowed,
                                       std::string(req.method_string()) + " is not allowed on " + std::string(path) +
                                           "; use " + std::string(http::to_string(found->method)),
                                       "invalid_request_error", std::nullopt, "method_not_allowed"},
                             req);
        res.set(http::field::allow, http::to_string(found->method));
        co_return co_await write_response(stream, std::move(res), timeout);
    }
    if (found->target == endpoint::health) {
        auto res = handle_health(req, st);
        co_return co_await write_response(stream, std::move(res), timeout);
    }
    if (found->target == endpoint::metrics) {
        auto res = metrics_response(req, st);
        co_return co_await write_response(stream, std::move(res), timeout);
    }
    if (!st.slots.ready()) {
        const api_error e{http::status::service_unavailable, "the model is still loading", "unavailable_error",
                          std::nullopt, "model_loading"};
        auto res = error_for(path, e, req);
        co_return co_await write_response(stream, std::move(res), timeout);
    }
    std::optional<http_response> simple;
    switch (found->target) {
    case endpoint::models:
        simple = handle_models(req, st);
        break;
    case endpoint::tokenize:
        simple = handle_tokenize(req, st);
        break;
    case endpoint::detokenize:
        simple = handle_detokenize(req, st);
        break;
    case endpoint::chat:
        co_return co_await handle_completion(stream, req, st, completion_kind::chat);
    case endpoint::completions:
        co_return co_await handle_completion(stream, req, st, completion_kind::completion);
    case endpoint::messages:
        co_return co_await handle_messages(stream, req, st);
    case endpoint::count_tokens:
        co_return co_await handle_count_tokens(stream, req, st);
    case endpoint::health:
    case endpoint::metrics:
        break;
    }
    if (simple) {
        co_return co_await write_response(stream, std::move(*simple), timeout);
    }
    co_return false;
}

/// The answer to a failed read, or nullopt when the connection should just close (EOF, timeout, reset).
std::optional<api_error> read_failure(const boost::system::error_code& ec, const server_state& st) {
    if (ec == http::error::body_limit) {
        return api_error{http::status::payload_too_large,
                         "the request body is larger than " + std::to_string(st.options.max_body) + " bytes",
                         "invalid_request_error", std::nullopt, "body_too_large"};
    }
    if (ec == http::error::header_limit) {
        return api_error{http::status::request_header_fields_too_large,
                         "the request header is larger than " + std::to_string(st.options.max_header) + " bytes",
                         "invalid_request_error", std::nullopt, "header_too_large"};
    }
    if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
        return bad_request("malformed HTTP request: " + ec.message(), std::nullopt, "bad_http");
    }
    return std::nullopt;
}

/// GET /v1/ws: null when the connection was handed to the WebSocket session, else the error to answer
/// (401 as on the other routes, 426 without an upgrade, 503 while the model loads).
std::optional<http_response> websocket_refusal(const http_request& req, const server_state& st) {
    if (auto denied = check_api_key(req, st)) {
        auto res = error_response(*denied, req.version(), false);
        res.set(http::field::www_authenticate, "Bearer");
        return res;
    }
    if (!beast::websocket::is_upgrade(req)) {
        const api_error e{http::status::upgrade_required, "/v1/ws only accepts a WebSocket upgrade (GET)",
                          "invalid_request_error", std::nullopt, "upgrade_required"};
        auto res = error_response(e, req.version(), false);
        res.set(http::field::upgrade, "websocket");
        return res;
    }
    if (!st.slots.ready()) {
        const api_error e{http::status::service_unavailable, "the model is still loading", "unavailable_error",
                          std::nullopt, "model_loading"};
        return error_response(e, req.version(), false);
    }
    return std::nullopt;
}

/// Half-closes, then reads and discards what the client still sends (up to a bound and the timeout), so
/// the error response is not destroyed by a reset from unread data.
asio::awaitable<void> linger_close(beast::tcp_stream& stream, std::chrono::milliseconds timeout) {
    boost::system::error_code ec;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    std::array<char, 16384> sink{};
    stream.expires_after(std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(2)));
    for (std::size_t total = 0; total < 64 * 1024 * 1024;) {
        auto [rec, n] = co_await stream.async_read_some(asio::buffer(sink), asio::as_tuple(asio::use_awaitable));
        if (rec) {
            break;
        }
        total += n;
    }
    stream.close();
}

} // namespace

asio::awaitable<void> do_session(beast::tcp_stream stream, server_state& st, connection_status& status) {
    beast::flat_buffer buffer;
    const auto timeout = st.options.timeout;
    while (!st.stopping) {
        status.idle = true;
        http::request_parser<http::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(st.options.max_header));
        parser.body_limit(st.options.max_body);
        stream.expires_after(timeout);
        auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
        status.idle = false;
        if (!ec && !parser.is_done()) {
            const auto& head = parser.get();
            if (beast::iequals(head[http::field::expect], "100-continue")) {
                http::response<http::empty_body> cont{http::status::continue_, head.version()};
                stream.expires_after(timeout);
                std::tie(ec, n) = co_await http::async_write(stream, cont, asio::as_tuple(asio::use_awaitable));
            }
            if (!ec) {
                stream.expires_after(timeout);
                std::tie(ec, n) =
                    co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
            }
        }
        if (ec) {
            if (auto answer = read_failure(ec, st)) {
                const unsigned version = parser.is_header_done() ? parser.get().version() : 11;
                // The start line is parsed before a too large Content-Length or header ends the read.
                const std::string_view target = parser.get().target();
                auto res = is_messages_path(target.substr(0, target.find('?')))
                               ? anthropic_error_response(*answer, version, false)
                               : error_response(*answer, version, false);
                co_await write_response(stream, std::move(res), timeout);
                st.metrics.count_request("unparsed", take_response_status(&stream));
                co_await linger_close(stream, timeout);
            }
            co_return;
        }
        auto req = parser.release();
        if (req.target().substr(0, req.target().find('?')) == websocket_path) {
            if (auto refusal = websocket_refusal(req, st)) {
                co_await write_response(stream, std::move(*refusal), timeout);
                st.metrics.count_request(websocket_path, take_response_status(&stream));
                break;
            }
            status.websocket = true;
            co_await do_websocket_session(std::move(stream), std::move(req), st);
            co_return;
        }
        // Scrapes are left out of the in-flight gauge, so an idle server reads 0.
        const std::string_view route = route_label(req);
        const bool scrape = route == "/metrics";
        st.metrics.in_flight += scrape ? 0 : 1;
        const bool keep = co_await handle_request(stream, req, st);
        st.metrics.in_flight -= scrape ? 0 : 1;
        const unsigned status = take_response_status(&stream);
        if (status != 0) {
            st.metrics.count_request(route, status);
        }
        if (!keep) {
            break;
        }
    }
    co_await linger_close(stream, timeout);
}

} // namespace sluice::server
