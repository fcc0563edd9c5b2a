// One HTTP/1.1 connection: keep-alive request loop with a timeout on every read, header and body limits,
// API-key check, routing, and a lingering close after errors.
#pragma once

#include "server/server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace sluice::server {

/// Serves requests on `stream` until the client closes, a read times out, an error response ends the
/// connection, or the coroutine is cancelled (server shutdown).
boost::asio::awaitable<void> do_session(boost::beast::tcp_stream stream, server_state& st);

} // namespace sluice::server
