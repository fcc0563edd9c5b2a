// The /v1/ws message parser: JSON text to a cancel, a validated request or an error event.
#include "server/websocket_message.hpp"

#include <boost/json/serialize.hpp>

#include <utility>

namespace sluice::server {
namespace {

namespace json = boost::json;

ws_message_error fail(const std::string* id, api_error e) {
    return ws_message_error{id != nullptr ? std::optional<std::string>(*id) : std::nullopt, std::move(e)};
}

/// The request's endpoint and body, read as the REST routes read theirs.
api_result<completion_request> read_request(const json::object& msg, std::uint64_t random_seed) {
    const auto* endpoint = msg.if_contains("endpoint");
    if (endpoint == nullptr || !endpoint->is_string() ||
        (endpoint->as_string() != "chat" && endpoint->as_string() != "completions")) {
        return bad_request("'endpoint' must be \"chat\" or \"completions\"", "endpoint");
    }
    const completion_kind kind =
        endpoint->as_string() == "chat" ? completion_kind::chat : completion_kind::completion;
    const auto* body = msg.if_contains("body");
    if (body == nullptr || !body->is_object()) {
        return bad_request("'body' must be an object (the REST request body)", "body");
    }
    auto parsed = parse_completion_request(json::serialize(*body), kind, random_seed);
    if (!parsed) {
        return parsed.error();
    }
    // Deltas here are plain text of one choice; the REST routes carry choices, logprobs and parsed output.
    if (parsed->n != 1) {
        return bad_request("body.n: only 1 is supported on /v1/ws (use the REST routes for n > 1)", "body.n",
                           "unsupported_value");
    }
    if (parsed->logprobs) {
        return bad_request("body.logprobs is not supported on /v1/ws (use the REST routes)", "body.logprobs",
                           "unsupported_value");
    }
    return parsed;
}

} // namespace

ws_message parse_ws_message(std::string_view text, std::uint64_t random_seed) {
    auto parsed = parse_json_object(text);
    if (!parsed) {
        return fail(nullptr, parsed.error());
    }
    const json::object& msg = *parsed;
    const auto* id_value = msg.if_contains("id");
    if (id_value == nullptr || !id_value->is_string() || id_value->as_string().empty()) {
        return fail(nullptr, bad_request("'id' must be a non-empty string", "id"));
    }
    std::string id(id_value->as_string());
    const auto* type = msg.if_contains("type");
    if (type != nullptr && type->is_string() && type->as_string() == "cancel") {
        return ws_cancel{std::move(id)};
    }
    if (type == nullptr || !type->is_string() || type->as_string() != "request") {
        return fail(&id, bad_request("'type' must be \"request\" or \"cancel\"", "type"));
    }
    auto request = read_request(msg, random_seed);
    if (!request) {
        return fail(&id, request.error());
    }
    return ws_request{std::move(id), std::move(*request)};
}

} // namespace sluice::server
