// A request's prompt tokens: the chat template rendered on the render pool (never on the event loop), the
// template's failures as 400 template_error, and the context-length check; shared by REST and WebSocket.
#pragma once

#include "server/api_error.hpp"
#include "server/openai_request.hpp"
#include "server/server_state.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <vector>

namespace sluice::server {

/// The prompt of `request` as tokens, or the 400 its client gets: a template error or limit (code
/// template_error, the message names it), an empty prompt, or a prompt the context cannot hold
/// (context_length_exceeded, with the counts). The model must be loaded.
boost::asio::awaitable<api_result<std::vector<std::int32_t>>> prompt_tokens_for(server_state& st,
                                                                                 const completion_request& request);

} // namespace sluice::server
