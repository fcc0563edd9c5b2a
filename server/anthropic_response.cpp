// Messages API bodies and events: content blocks, SSE events with their names, usage, stop reasons, errors.
#include "server/anthropic_response.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <random>

namespace sluice::server {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

/// Status 529, Anthropic's "overloaded" (not in Beast's table).
constexpr unsigned overloaded_status = 529;

std::string random_suffix() {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string s;
    for (int i = 0; i < 24; ++i) {
        s += alphabet[rng() % (sizeof alphabet - 1)];
    }
    return s;
}

bool is_space(std::string_view text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; });
}

json::object block_event(std::string_view type, std::size_t index) {
    return json::object{{"type", type}, {"index", index}};
}

std::string delta_event(std::size_t index, json::object delta) {
    auto e = block_event("content_block_delta", index);
    e["delta"] = std::move(delta);
    return anthropic_event(e);
}

} // namespace

std::string make_message_id() {
    return "msg_" + random_suffix();
}

std::string_view anthropic_error_type(const api_error& e) noexcept {
    switch (e.status) {
    case http::status::bad_request:
    case http::status::method_not_allowed:
        return "invalid_request_error";
    case http::status::unauthorized:
        return "authentication_error";
    case http::status::forbidden:
        return "permission_error";
    case http::status::not_found:
        return "not_found_error";
    case http::status::payload_too_large:
        return "request_too_large";
    case http::status::too_many_requests:
        return "rate_limit_error";
    case http::status::service_unavailable:
        return "overloaded_error";
    default:
        return "api_error";
    }
}

json::object anthropic_error_body(const api_error& e) {
    return json::object{{"type", "error"},
                        {"error", json::object{{"type", anthropic_error_type(e)}, {"message", e.message}}}};
}

http::response<http::string_body> anthropic_error_response(const api_error& e, unsigned version, bool keep_alive) {
    http::response<http::string_body> res{e.status, version};
    if (e.status == http::status::service_unavailable) {
        res.result(overloaded_status);
        res.reason("Overloaded");
        res.set(http::field::retry_after, "1");
    }
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, "application/json");
    res.keep_alive(keep_alive);
    res.body() = json::serialize(anthropic_error_body(e));
    res.prepare_payload();
    return res;
}

std::string anthropic_event(const json::object& data) {
    std::string out = "event: ";
    const auto* type = data.if_contains("type");
    out += type != nullptr && type->is_string() ? std::string_view(type->get_string()) : std::string_view("message");
    out += "\ndata: ";
    out += json::serialize(data);
    out += "\n\n";
    return out;
}

json::object anthropic_usage(const generation_summary& s) {
    return json::object{{"input_tokens", s.prompt_tokens - s.cached_tokens},
                        {"cache_creation_input_tokens", 0},
                        {"cache_read_input_tokens", s.cached_tokens},
                        {"output_tokens", s.completion_tokens}};
}

std::string_view anthropic_stop_reason(const generation_summary& s, bool called,
                                       const std::vector<std::string>& stops) {
    if (s.reason == finish_reason::length || s.reason == finish_reason::context_full) {
        return "max_tokens";
    }
    if (called) {
        return "tool_use";
    }
    if (!s.stopped_by.empty() && std::find(stops.begin(), stops.end(), s.stopped_by) != stops.end()) {
        return "stop_sequence";
    }
    return "end_turn";
}

json::object message_json(const message_meta& meta, json::array content, json::value stop_reason,
                          json::value stop_sequence, json::object usage) {
    return json::object{{"id", meta.id},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", meta.model},
                        {"content", std::move(content)},
                        {"stop_reason", std::move(stop_reason)},
                        {"stop_sequence", std::move(stop_sequence)},
                        {"usage", std::move(usage)}};
}

std::string message_start_events(const message_meta& meta, const generation_summary& s) {
    auto usage = anthropic_usage(s);
    usage["output_tokens"] = 0;
    const json::object start{{"type", "message_start"},
                             {"message", message_json(meta, {}, nullptr, nullptr, std::move(usage))}};
    return anthropic_event(start) + anthropic_event(json::object{{"type", "ping"}});
}

std::string message_end_events(std::string_view stop_reason, const json::value& stop_sequence,
                               const generation_summary& s) {
    const json::object delta{{"type", "message_delta"},
                             {"delta", json::object{{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence}}},
                             {"usage", anthropic_usage(s)}};
    return anthropic_event(delta) + anthropic_event(json::object{{"type", "message_stop"}});
}

std::string message_blocks::open(open_block kind, json::object block) {
    std::string events = close();
    auto start = block_event("content_block_start", content_.size());
    start["content_block"] = block;
    content_.push_back(std::move(block));
    open_ = kind;
    return events + anthropic_event(start);
}

std::string message_blocks::close() {
    if (open_ == open_block::none) {
        return {};
    }
    const std::size_t index = content_.size() - 1;
    std::string events;
    if (open_ == open_block::thinking) {
        events += delta_event(index, json::object{{"type", "signature_delta"}, {"signature", ""}});
    }
    open_ = open_block::none;
    return events + anthropic_event(block_event("content_block_stop", index));
}

std::string message_blocks::append_text(std::string_view text) {
    std::string events;
    if (open_ != open_block::text) {
        if (is_space(text)) {
            held_space_ += text; // whitespace alone between blocks opens nothing
            return events;
        }
        events += open(open_block::text, json::object{{"type", "text"}, {"text", ""}});
    }
    const std::string piece = held_space_ + std::string(text);
    held_space_.clear();
    auto& block_text = content_.back().as_object()["text"].as_string();
    block_text.append(piece);
    return events + delta_event(content_.size() - 1, json::object{{"type", "text_delta"}, {"text", piece}});
}

std::string message_blocks::add(const choice_delta& d) {
    std::string events;
    if (!d.reasoning.empty()) {
        if (open_ != open_block::thinking) {
            events +=
                open(open_block::thinking, json::object{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
        }
        content_.back().as_object()["thinking"].as_string().append(d.reasoning);
        events += delta_event(content_.size() - 1, json::object{{"type", "thinking_delta"}, {"thinking", d.reasoning}});
    }
    if (!d.content.empty()) {
        events += append_text(d.content);
    }
    for (const auto& call : d.calls) {
        const std::string id = "toolu_" + call.id.substr(call.id.find('_') + 1);
        events += open(open_block::none,
                       json::object{{"type", "tool_use"}, {"id", id}, {"name", call.name}, {"input", json::object{}}});
        boost::system::error_code ec;
        auto input = json::parse(call.arguments, ec);
        content_.back().as_object()["input"] = !ec && input.is_object() ? std::move(input) : json::object{};
        const std::size_t index = content_.size() - 1;
        events += delta_event(index, json::object{{"type", "input_json_delta"}, {"partial_json", call.arguments}});
        events += anthropic_event(block_event("content_block_stop", index));
        held_space_.clear();
        called_ = true;
    }
    return events;
}

} // namespace sluice::server
