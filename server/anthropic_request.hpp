// Reads Anthropic Messages API request bodies (POST /v1/messages and /v1/messages/count_tokens) into the chat
// route's request: the messages in OpenAI form for the chat template (tool_use -> assistant tool_calls,
// tool_result -> "tool" messages, thinking -> reasoning_content), tools as functions, sampling and stops.
#pragma once

#include "server/api_error.hpp"
#include "server/openai_request.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

/// Which Anthropic endpoint a body came to.
enum class messages_endpoint {
    create,       ///< POST /v1/messages: max_tokens required, sampling and streaming fields allowed
    count_tokens, ///< POST /v1/messages/count_tokens: the prompt's fields only
};

/// A validated Messages API request.
struct messages_request {
    /// The chat request it translates to: kind chat, messages (without the prefill), tools, sampling, stops,
    /// max_tokens, stream, enable_thinking in template_kwargs.
    completion_request chat;
    std::string prefill;                     ///< a final assistant message's text, which the answer continues
    std::vector<std::string> stop_sequences; ///< as sent (also in chat.generate.stop)
};

/// Parses `body` (JSON text) for `endpoint`; `random_seed` seeds the sampler (the API has no seed). Errors (400,
/// naming the field): invalid JSON, unknown top-level fields other than those Claude Code sends beyond the
/// documented schema (accepted and ignored), wrong types or ranges, images and documents (no vision), server
/// tools, a forced tool_choice ("any" / "tool") without tools or naming one not among them, and an
/// output_config.format schema the schema compiler refuses. A forced call is enforced by the handler
/// (apply_tool_choice), once the template's call format is known.
api_result<messages_request> parse_messages_request(std::string_view body, messages_endpoint endpoint,
                                                    std::uint64_t random_seed);

} // namespace sluice::server
