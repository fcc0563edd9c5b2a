// Reads OpenAI chat-completions and completions request bodies into engine requests, rejecting (400, naming
// the field) anything the server does not support rather than ignoring it.
#pragma once

#include "runtime/engine/session.hpp"
#include "server/api_error.hpp"
#include "server/json_body.hpp"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::server {

/// Which endpoint a request came to.
enum class completion_kind {
    chat,       ///< POST /v1/chat/completions: `messages`
    completion, ///< POST /v1/completions: `prompt`
};

/// A validated request: what to generate and how to answer.
struct completion_request {
    completion_kind kind = completion_kind::chat;
    generate_request generate; ///< messages or prompt, sampling (seed resolved), stops, max_tokens
    std::string model;         ///< the `model` field as sent (may be empty)
    bool stream = false;
    bool include_usage = false; ///< stream_options.include_usage
    std::uint32_t n = 1;        ///< choices to generate (each with seed + index)
    bool logprobs = false;      ///< chat: `logprobs: true`; completions: `logprobs` given (its value is top_logprobs)
    std::uint32_t top_logprobs = 0;
    bool parse_tool_calls = false;    ///< chat with `tools` and tool_choice other than "none"
    bool parallel_tool_calls = true;  ///< false: only the first call is returned
    boost::json::array tools;         ///< the request's tools (parameter types for the tool-call parser)
    /// tool_choice "required" (an empty name: any of the tools) or naming a function: the answer must be a call,
    /// which a grammar enforces once the model's tool-call format is known (apply_tool_choice).
    std::optional<std::string> forced_tool;
};

/// Parses `body` (JSON text) for endpoint `kind`. `random_seed` is used when the request has no seed (or
/// seed -1). Errors: invalid JSON or UTF-8, a body that is not an object, unknown or unsupported fields, wrong
/// types, values out of range (including the engine's validate() and validate_stops()).
api_result<completion_request> parse_completion_request(std::string_view body, completion_kind kind,
                                                        std::uint64_t random_seed);

} // namespace sluice::server
