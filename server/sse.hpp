// Server-sent events over one HTTP response: `data: <json>\n\n` events in chunked transfer encoding
// (HTTP/1.1, so the connection stays usable afterwards) or until close (HTTP/1.0).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace sluice::server {

/// "data: <serialized json>\n\n".
std::string sse_event(const boost::json::object& data);

/// "data: [DONE]\n\n", the OpenAI end-of-stream marker.
inline constexpr std::string_view sse_done = "data: [DONE]\n\n";

/// Writes one SSE response. Every write has `timeout`; a failed write means the client is gone (or stopped
/// reading) and every later call returns false at once. Not copyable; one writer per response.
class sse_writer {
public:
    sse_writer(boost::beast::tcp_stream& stream, std::chrono::milliseconds timeout, unsigned version, bool keep_alive)
        : stream_(stream), timeout_(timeout), version_(version), keep_alive_(keep_alive && version >= 11) {}

    /// Sends the status line and headers (200, text/event-stream, no-cache).
    boost::asio::awaitable<bool> start();
    /// Sends one event (already framed by sse_event, or sse_done).
    boost::asio::awaitable<bool> send(std::string_view event);
    /// Ends the response body.
    boost::asio::awaitable<bool> finish();

    /// False after a failed write.
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    /// Whether the connection may carry another request afterwards.
    [[nodiscard]] bool keep_alive() const noexcept { return keep_alive_ && ok_; }

private:
    boost::beast::tcp_stream& stream_;
    std::chrono::milliseconds timeout_;
    unsigned version_;
    bool keep_alive_;
    bool ok_ = true;
};

} // namespace sluice::server
