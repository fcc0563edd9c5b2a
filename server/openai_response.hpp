// Builds OpenAI response bodies: non-streamed completions, streamed chunks, usage and llama.cpp-style timings.
#pragma once

#include "runtime/engine/session.hpp"
#include "server/openai_request.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>

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

/// The whole non-streamed response.
boost::json::object full_response(const response_meta& meta, const std::string& text, const generation_summary& s);

/// A streamed chunk carrying `text`. For chat, `first` adds role "assistant" to the delta.
boost::json::object text_chunk(const response_meta& meta, std::string_view text, bool first);

/// The chunk that ends the choice: empty delta (chat) or text "" (completions), finish_reason and timings.
boost::json::object final_chunk(const response_meta& meta, const generation_summary& s);

/// The include_usage chunk: `choices: []`, usage and timings.
boost::json::object usage_chunk(const response_meta& meta, const generation_summary& s);

} // namespace sluice::server
