// Anthropic Messages API answers: the message object, its content blocks (thinking, text, tool_use) built from
// a choice's output, the streamed events (`event: name` SSE), stop reasons, usage, and Anthropic-shaped errors.
#pragma once

#include "runtime/engine/session.hpp"
#include "server/api_error.hpp"
#include "server/choice_output.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

/// A fresh message id: "msg_" and 24 random letters and digits.
std::string make_message_id();

/// Anthropic's error type for `e` by its status: invalid_request_error (400, 405), authentication_error (401),
/// permission_error (403), not_found_error (404), request_too_large (413), rate_limit_error (429),
/// overloaded_error (503), api_error (anything else).
std::string_view anthropic_error_type(const api_error& e) noexcept;

/// {"type": "error", "error": {"type", "message"}}.
boost::json::object anthropic_error_body(const api_error& e);

/// A complete response carrying `e` in Anthropic's shape. OpenAI's 503 (model loading, queue full, shutdown)
/// becomes Anthropic's 529 overloaded_error, which its clients retry; Retry-After is kept.
boost::beast::http::response<boost::beast::http::string_body>
anthropic_error_response(const api_error& e, unsigned version, bool keep_alive);

/// "event: <name>\ndata: <json>\n\n", the name being the payload's "type".
std::string anthropic_event(const boost::json::object& data);

/// {input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens}: input_tokens are the
/// prompt tokens computed, cache_read_input_tokens those reused from the slot's previous turn.
boost::json::object anthropic_usage(const generation_summary& s);

/// The stop reason: max_tokens (length or a full context), tool_use (calls made), stop_sequence (one of
/// `stops` ended it), else end_turn.
std::string_view anthropic_stop_reason(const generation_summary& s, bool called, const std::vector<std::string>& stops);

/// What every event and the message of one answer share.
struct message_meta {
    std::string id;    ///< "msg_..."
    std::string model; ///< the served model's name
};

/// The message object: content blocks, stop reason (null while streaming starts), stop sequence and usage.
boost::json::object message_json(const message_meta& meta, boost::json::array content, boost::json::value stop_reason,
                                 boost::json::value stop_sequence, boost::json::object usage);

/// message_start (with an empty message) followed by a ping.
std::string message_start_events(const message_meta& meta, const generation_summary& s);

/// message_delta (stop_reason, stop_sequence, usage) followed by message_stop.
std::string message_end_events(std::string_view stop_reason, const boost::json::value& stop_sequence,
                               const generation_summary& s);

/// The content blocks of one answer, in the order the model wrote them, and the streamed events that build
/// them: a thinking block (closed with an empty signature: this server does not sign), text blocks, one
/// tool_use block per call (ids "toolu_..."; its input in one input_json_delta). Whitespace between blocks
/// opens no text block. Not thread-safe; one per answer.
class message_blocks {
public:
    /// Adds a choice delta; returns its events (content_block_start/delta/stop).
    std::string add(const choice_delta& d);
    /// Closes the open block; returns its events.
    std::string close();

    [[nodiscard]] const boost::json::array& content() const noexcept { return content_; }
    [[nodiscard]] bool called() const noexcept { return called_; }

private:
    enum class open_block { none, thinking, text };
    std::string open(open_block kind, boost::json::object block);
    std::string append_text(std::string_view text);

    boost::json::array content_;
    open_block open_ = open_block::none;
    std::string held_space_; ///< whitespace-only content seen while no text block is open
    bool called_ = false;
};

} // namespace sluice::server
