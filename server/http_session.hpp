// One HTTP/1.1 connection: keep-alive request loop with a timeout on every read, header and body limits,
// API-key check, routing, and a lingering close after errors.
#pragma once

#include "server/server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace sluice::server {

/// What the shutdown needs to know of one connection.
struct connection_status {
    bool idle = true;       ///< waiting for the next request's header: shutdown closes it at once
    bool websocket = false; ///< upgraded: the WebSocket session drains itself
};

/// Serves requests on `stream` until the client closes, a read times out, an error response ends the
/// connection, the server stops (after the request in progress), or the coroutine is cancelled. `status`
/// outlives the coroutine.
boost::asio::awaitable<void> do_session(boost::beast::tcp_stream stream, server_state& st, connection_status& status);

} // namespace sluice::server
