// One step of every streamed response (OpenAI SSE, Anthropic SSE): the next token is computed while the previous
// token's events are written, so a slow client and the forward pass overlap instead of adding up.
#pragma once

#include "server/sse.hpp"

#include <sluice/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

namespace sluice::server {

/// The next event of `tokens`, awaited while `pending` (the previous token's events, already framed) is sent on
/// `out`; `pending` is empty afterwards. A failed write leaves out.ok() false; the token still comes back.
boost::asio::awaitable<result<std::optional<token_event>>> next_while_sending(sse_writer& out, token_stream& tokens,
                                                                              std::string& pending);

} // namespace sluice::server
