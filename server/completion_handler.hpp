// POST /v1/chat/completions and /v1/completions: validation, prompt rendering, a slot, then the generation
// answered as one JSON response or as SSE; a client that goes away stops its generation.
#pragma once

#include "server/openai_request.hpp"
#include "server/server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::server {

/// Answers `req` on `stream` (the model must be loaded). Returns whether the connection may carry another
/// request. Never blocks the io_context: compute runs on the model's pool and is pulled one token at a time.
boost::asio::awaitable<bool> handle_completion(boost::beast::tcp_stream& stream,
                                               const boost::beast::http::request<boost::beast::http::string_body>& req,
                                               server_state& st, completion_kind kind);

/// Completes when the peer closes its side (EOF or reset). Bytes of a pipelined next request are not a
/// disconnect: then it waits until cancelled. Raced against a generation, completing cancels it.
boost::asio::awaitable<void> watch_disconnect(boost::asio::ip::tcp::socket& socket);

/// Writes `res` with the server's timeout; false when the write failed.
boost::asio::awaitable<bool> write_response(boost::beast::tcp_stream& stream,
                                            boost::beast::http::response<boost::beast::http::string_body> res,
                                            std::chrono::milliseconds timeout);

} // namespace sluice::server
