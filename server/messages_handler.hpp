// POST /v1/messages and /v1/messages/count_tokens, Anthropic's Messages API: the request translated into the chat
// route's generation (same template rendering, slots, output parsing), answered as one message or as named SSE
// events; every error in Anthropic's shape.
#pragma once

#include "server/server_state.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::server {

/// Answers a Messages API request (the model must be loaded). Returns whether the connection may carry
/// another request. A client that goes away stops the generation.
boost::asio::awaitable<bool> handle_messages(boost::beast::tcp_stream& stream,
                                             const boost::beast::http::request<boost::beast::http::string_body>& req,
                                             server_state& st);

/// Answers {"input_tokens": n}: the tokens of the prompt /v1/messages would generate from.
boost::asio::awaitable<bool>
handle_count_tokens(boost::beast::tcp_stream& stream,
                    const boost::beast::http::request<boost::beast::http::string_body>& req, server_state& st);

/// Whether `path` belongs to the Messages API (its errors take Anthropic's shape).
bool is_messages_path(std::string_view path) noexcept;

} // namespace sluice::server
