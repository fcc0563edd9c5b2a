// The incremental output parser: <think> reasoning, tool-call blocks (tool_call_blocks.cpp) and harmony channels.
#include "runtime/chat/output_parser.hpp"

#include "runtime/chat/tool_call_blocks.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace sluice::chat {
namespace {

constexpr std::string_view think_open = "<think>";
constexpr std::string_view think_close = "</think>";
constexpr std::size_t npos = std::string_view::npos;
/// A harmony header longer than this without <|message|> is not a header: it is read as content.
constexpr std::size_t max_harmony_header = 512;

constexpr std::array<std::string_view, 7> harmony_markers{"<|start|>", "<|channel|>", "<|message|>", "<|end|>",
                                                          "<|call|>",  "<|return|>",  "<|constrain|>"};
constexpr std::array<std::string_view, 4> harmony_body_ends{"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
constexpr std::array<std::string_view, 2> tag_markers{"<tool_call>", "</tool_call>"};
constexpr std::array<std::string_view, 5> deepseek_markers{"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
                                                           "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                                                           "<｜tool▁sep｜>"};
constexpr std::array<std::string_view, 5> kimi_markers{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                                                       "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
                                                       "<|tool_call_end|>"};
constexpr std::array<std::string_view, 3> mistral_markers{"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
constexpr std::array<std::string_view, 1> llama_markers{"<|python_tag|>"};

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

bool contains(std::string_view s, std::string_view what) {
    return s.find(what) != npos;
}

/// Length of the longest end of `s` that is a proper prefix of one of `markers` (text to hold back).
std::size_t partial_marker(std::string_view s, std::span<const std::string_view> markers) {
    std::size_t best = 0;
    for (const auto m : markers) {
        for (std::size_t k = std::min(s.size(), m.size() - 1); k > best; --k) {
            if (m.starts_with(s.substr(s.size() - k))) {
                best = k;
                break;
            }
        }
    }
    return best;
}

/// The first occurrence in `s` of any of `markers`: its position and which (npos when none).
std::pair<std::size_t, std::string_view> find_first(std::string_view s, std::span<const std::string_view> markers) {
    std::pair<std::size_t, std::string_view> best{npos, {}};
    for (const auto m : markers) {
        const auto at = s.find(m);
        if (at < best.first) {
            best = {at, m};
        }
    }
    return best;
}

/// The word after `key` in a harmony header, up to whitespace or the next marker.
std::string header_word(std::string_view header, std::string_view key) {
    const auto at = header.find(key);
    if (at == npos) {
        return {};
    }
    std::size_t end = at + key.size();
    while (end < header.size() && !is_space(header[end]) && header[end] != '<') {
        ++end;
    }
    return std::string(header.substr(at + key.size(), end - at - key.size()));
}

} // namespace

tool_format detect_tool_format(std::string_view t) {
    if (contains(t, "<|channel|>") && contains(t, "<|message|>")) {
        return tool_format::harmony;
    }
    if (contains(t, "<｜tool▁calls▁begin｜>")) {
        return tool_format::deepseek_v3;
    }
    if (contains(t, "<|tool_calls_section_begin|>")) {
        return tool_format::kimi_k2;
    }
    if (contains(t, "<arg_key>")) {
        return tool_format::glm45;
    }
    if (contains(t, "<function=") && contains(t, "<parameter=")) {
        return tool_format::qwen3_coder;
    }
    if (contains(t, "<tool_call>")) {
        return tool_format::hermes;
    }
    if (contains(t, "[TOOL_CALLS]")) {
        return tool_format::mistral;
    }
    if (contains(t, "<|python_tag|>") || (contains(t, "<|start_header_id|>") && contains(t, "\"parameters\""))) {
        return tool_format::llama3;
    }
    return tool_format::hermes;
}

bool template_thinks(std::string_view t) {
    return contains(t, think_open) || contains(t, think_close);
}

std::string_view to_string(tool_format f) noexcept {
    switch (f) {
    case tool_format::none:
        return "none";
    case tool_format::hermes:
        return "hermes";
    case tool_format::qwen3_coder:
        return "qwen3_coder";
    case tool_format::glm45:
        return "glm45";
    case tool_format::deepseek_v3:
        return "deepseek_v3";
    case tool_format::kimi_k2:
        return "kimi_k2";
    case tool_format::llama3:
        return "llama3";
    case tool_format::mistral:
        return "mistral";
    case tool_format::harmony:
        return "harmony";
    }
    return "none";
}

std::span<const std::string_view> control_markers(tool_format f) noexcept {
    switch (f) {
    case tool_format::hermes:
    case tool_format::qwen3_coder:
    case tool_format::glm45:
        return tag_markers;
    case tool_format::deepseek_v3:
        return deepseek_markers;
    case tool_format::kimi_k2:
        return kimi_markers;
    case tool_format::mistral:
        return mistral_markers;
    case tool_format::llama3:
        return llama_markers;
    case tool_format::harmony:
        return harmony_markers;
    case tool_format::none:
        break;
    }
    return {};
}

output_parser::output_parser(output_syntax syntax, boost::json::array tools)
    : syntax_(syntax), tools_(std::move(tools)) {
    if (syntax_.tools == tool_format::harmony) {
        mode_ = mode::harmony_header;
    } else if (syntax_.starts_in_reasoning) {
        mode_ = mode::reasoning;
        trim_next_ = true;
    }
}

output_delta output_parser::push(std::string_view text) {
    output_delta out;
    if (syntax_.tools == tool_format::none && !syntax_.think_tags && mode_ == mode::content) {
        out.content = std::string(text); // nothing to look for
        return out;
    }
    pending_ += text;
    run(false, out);
    return out;
}

output_delta output_parser::finish() {
    output_delta out;
    run(true, out);
    return out;
}

void output_parser::run(bool at_end, output_delta& out) {
    for (bool again = true; again;) {
        switch (mode_) {
        case mode::content:
            again = step_content(at_end, out);
            break;
        case mode::reasoning:
            again = step_reasoning(at_end, out);
            break;
        case mode::harmony_header:
            again = step_harmony_header(at_end, out);
            break;
        case mode::harmony_body:
            again = step_harmony_body(at_end, out);
            break;
        }
    }
}

bool output_parser::step_reasoning(bool at_end, output_delta& out) {
    const auto close = pending_.find(think_close);
    const bool closed = close != npos;
    const std::size_t keep = closed || at_end ? 0 : partial_marker(pending_, std::array{think_close});
    std::string_view text(pending_.data(), closed ? close : pending_.size() - keep);
    if (trim_next_) {
        while (!text.empty() && is_space(text.front())) {
            text.remove_prefix(1);
        }
        trim_next_ = text.empty();
    }
    // Whitespace at the end is held until text follows it; the whitespace before </think> is dropped.
    std::size_t body = text.size();
    while (body > 0 && is_space(text[body - 1])) {
        --body;
    }
    if (body > 0) {
        out.reasoning += held_space_;
        out.reasoning += text.substr(0, body);
        held_space_.clear();
    }
    held_space_ += text.substr(body);
    if (closed) {
        pending_.erase(0, close + think_close.size());
        held_space_.clear();
        mode_ = mode::content;
        trim_next_ = true;
        return true;
    }
    pending_.erase(0, pending_.size() - keep);
    return false;
}

void output_parser::emit_content(std::string_view text, output_delta& out) {
    if (trim_next_) {
        while (!text.empty() && is_space(text.front())) {
            text.remove_prefix(1);
        }
        trim_next_ = text.empty();
    }
    out.content += text;
    if (std::any_of(text.begin(), text.end(), [](char c) { return !is_space(c); })) {
        content_started_ = true;
    }
}

bool output_parser::step_content(bool at_end, output_delta& out) {
    if (pending_.empty()) {
        return false;
    }
    std::vector<std::string_view> markers(detail::block_openers(syntax_.tools).begin(),
                                          detail::block_openers(syntax_.tools).end());
    if (syntax_.think_tags) {
        markers.push_back(think_open);
    }
    auto [at, which] = find_first(pending_, markers);
    // Llama 3.x writes a call as the whole answer: a JSON object before any other content.
    if (syntax_.tools == tool_format::llama3 && !content_started_) {
        const auto first = pending_.find_first_not_of(" \t\r\n");
        if (first == npos) {
            if (at_end) {
                emit_content(pending_, out);
                pending_.clear();
            }
            return false;
        }
        if (pending_[first] == '{' && first < at) {
            at = first;
            which = "{";
        }
    }
    if (at == npos) {
        const std::size_t keep = at_end ? 0 : partial_marker(pending_, markers);
        emit_content(std::string_view(pending_).substr(0, pending_.size() - keep), out);
        pending_.erase(0, pending_.size() - keep);
        return false;
    }
    emit_content(std::string_view(pending_).substr(0, at), out);
    pending_.erase(0, at);
    if (which == think_open) {
        pending_.erase(0, think_open.size());
        mode_ = mode::reasoning;
        trim_next_ = true;
        return true;
    }
    auto block = detail::read_block(syntax_.tools, pending_, at_end, tools_);
    switch (block.status) {
    case detail::block_status::incomplete:
        return false;
    case detail::block_status::complete:
        for (auto& c : block.calls) {
            out.calls.push_back(std::move(c));
        }
        content_started_ = true;
        trim_next_ = true;
        break;
    case detail::block_status::malformed:
        emit_content(std::string_view(pending_).substr(0, block.length), out);
        content_started_ = true;
        break;
    }
    pending_.erase(0, std::min(block.length, pending_.size()));
    return true;
}

bool output_parser::step_harmony_header(bool at_end, output_delta& out) {
    constexpr std::string_view message = "<|message|>";
    const auto at = pending_.find(message);
    if (at == npos) {
        const bool too_long = pending_.size() > max_harmony_header;
        if (at_end || too_long) {
            // No header follows: text the model wrote outside the channel format is content.
            if (too_long || pending_.find("<|") == npos) {
                emit_content(pending_, out);
            }
            pending_.clear();
        }
        return false;
    }
    const std::string_view header(pending_.data(), at);
    channel_ = header_word(header, "<|channel|>");
    recipient_ = header_word(header, "to=");
    pending_.erase(0, at + message.size());
    mode_ = mode::harmony_body;
    return true;
}

bool output_parser::step_harmony_body(bool at_end, output_delta& out) {
    const bool is_call = recipient_.starts_with("functions.");
    const auto [at, which] = find_first(pending_, harmony_body_ends);
    const bool ended = at != npos || at_end;
    std::size_t take = at != npos ? at : pending_.size();
    if (!ended) {
        if (is_call) {
            return false; // a call's arguments are read whole
        }
        take -= partial_marker(pending_, harmony_body_ends);
    }
    const std::string_view body(pending_.data(), take);
    if (is_call) {
        parsed_tool_call call;
        if (detail::make_call(std::string_view(recipient_).substr(10), body, call)) {
            out.calls.push_back(std::move(call));
        } else {
            emit_content(body, out);
        }
    } else if (channel_ == "analysis") {
        out.reasoning += body;
    } else {
        emit_content(body, out);
    }
    // <|start|> opens the next message's header: it stays for the header step to read.
    pending_.erase(0, take + (at != npos && which != "<|start|>" ? which.size() : 0));
    if (ended) {
        mode_ = mode::harmony_header;
        return !pending_.empty();
    }
    return false;
}

output_delta parse_output(std::string_view text, output_syntax syntax, boost::json::array tools) {
    output_parser p(syntax, std::move(tools));
    auto out = p.push(text);
    auto tail = p.finish();
    out.reasoning += tail.reasoning;
    out.content += tail.content;
    for (auto& c : tail.calls) {
        out.calls.push_back(std::move(c));
    }
    return out;
}

} // namespace sluice::chat
