// Builds OpenAI response bodies: non-streamed completions, streamed chunks, usage and llama.cpp-style timings.
#pragma once

#include "runtime/engine/session.hpp"
#include "server/choice_output.hpp"
#include "server/openai_request.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

/// What every chunk and response of one request shares.
struct response_meta {
    completion_kind kind = completion_kind::chat;
    std::string id;    ///< "chatcmpl-..." or "cmpl-...", one per response
    std::string model; ///< the served model's name
    std::int64_t created = 0;
    bool include_usage = false; ///< streamed with stream_options.include_usage: chunks carry "usage": null
};

/// A fresh id for `kind` ("chatcmpl-" or "cmpl-" and 24 hex digits).
std::string make_response_id(completion_kind kind);

/// OpenAI's finish_reason for the engine's (a full context reads as "length").
std::string_view finish_reason_name(finish_reason r) noexcept;

/// {prompt_tokens, completion_tokens, total_tokens}.
boost::json::object usage_json(const generation_summary& s);

/// {prompt_n, prompt_ms, prompt_per_second, predicted_n, predicted_ms, predicted_per_second}; prompt_n counts
/// the prompt tokens actually computed (not those reused from the session's cache).
boost::json::object timings_json(const generation_summary& s);

/// The finish_reason of a choice: "tool_calls" when it made calls and stopped by itself, else the engine's.
std::string_view choice_finish_reason(const generation_summary& s, const choice_output& out) noexcept;

/// `total` with `more` (another choice of the same prompt) added: completion tokens and decode time add up.
void add_choice_summary(generation_summary& total, const generation_summary& more);

/// One finished choice of a non-streamed answer.
struct finished_choice {
    const choice_output* output = nullptr;
    std::string finish_reason;
};

/// The whole non-streamed response: every choice (message with content, reasoning_content and tool_calls for
/// chat; text for completions) with its logprobs, usage and timings of `total`.
boost::json::object full_response(const response_meta& meta, std::span<const finished_choice> choices,
                                  const generation_summary& total);

/// The first chunk of a streamed chat choice: delta {role: "assistant", content: ""}.
boost::json::object role_chunk(const response_meta& meta, std::size_t index);

/// The chunks carrying `d` for choice `index`: reasoning, content and logprobs in one, then each tool call as
/// OpenAI streams it (index, id, type and name with empty arguments; then the arguments). None when `d` is empty.
std::vector<boost::json::object> delta_chunks(const response_meta& meta, std::size_t index, const choice_delta& d);

/// The chunk that ends choice `index`: empty delta (chat) or text "" (completions), `finish_reason` and timings.
boost::json::object final_chunk(const response_meta& meta, std::size_t index, std::string_view finish_reason,
                                const generation_summary& s);

/// The include_usage chunk: `choices: []`, usage and timings.
boost::json::object usage_chunk(const response_meta& meta, const generation_summary& s);

} // namespace sluice::server
