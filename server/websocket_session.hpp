// GET /v1/ws: a WebSocket carrying several completions at once. Text messages in ({"type":"request"|"cancel"}),
// events out ({"type":"delta"|"done"|"error"}); see docs/SERVER.md, "WebSocket".
#pragma once

#include "server/server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::server {

/// Accepts the upgrade `req` (already authorized, the model loaded) on `stream` and serves the socket until
/// the client closes it, a write queue overflows (close 1008), or the coroutine is cancelled (shutdown).
/// Requests run through the shared scheduler; closing the socket cancels every one of them.
boost::asio::awaitable<void> do_websocket_session(boost::beast::tcp_stream stream,
                                                  boost::beast::http::request<boost::beast::http::string_body> req,
                                                  server_state& st);

} // namespace sluice::server
