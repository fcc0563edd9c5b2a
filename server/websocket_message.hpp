// Reads one text message of the /v1/ws protocol ({"type": "request"|"cancel", "id", "endpoint", "body"}) into
// what the session does with it, without touching the socket: the session dispatches, this file decides.
#pragma once

#include "server/api_error.hpp"
#include "server/openai_request.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace sluice::server {

/// {"type": "cancel", "id": ...}: stop the running request `id`.
struct ws_cancel {
    std::string id;
};

/// {"type": "request", "id": ..., "endpoint": "chat"|"completions", "body": {...}}: a validated request.
struct ws_request {
    std::string id;
    completion_request request; ///< the body as the REST route would have read it (kind set from endpoint)
};

/// A message the client gets an error event for; `id` is set when the message carried a usable one.
struct ws_message_error {
    std::optional<std::string> id;
    api_error error;
};

using ws_message = std::variant<ws_cancel, ws_request, ws_message_error>;

/// Parses one text message. `random_seed` is the seed of a request without one. Never throws on bad input:
/// every malformed message (invalid JSON or UTF-8, missing or empty id, unknown type, unknown endpoint, a body
/// that is not an object, any error of parse_completion_request) is a ws_message_error with a 4xx api_error.
ws_message parse_ws_message(std::string_view text, std::uint64_t random_seed);

} // namespace sluice::server
