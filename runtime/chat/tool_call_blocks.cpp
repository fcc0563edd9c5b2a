// Tool-call block readers, one per syntax family: <tool_call> tags (Hermes JSON, Qwen3-Coder XML, GLM
// arg_key/arg_value), DeepSeek V3, Kimi-K2, Mistral [TOOL_CALLS] and Llama 3.x JSON.
#include "runtime/chat/tool_call_blocks.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <array>
#include <optional>

namespace sluice::chat::detail {
namespace {

namespace json = boost::json;
constexpr std::size_t npos = std::string_view::npos;

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

std::size_t skip_space(std::string_view s, std::size_t pos) {
    while (pos < s.size() && is_space(s[pos])) {
        ++pos;
    }
    return pos;
}

/// Whether the text from `pos` on is a proper prefix of `marker` (so the marker may still arrive).
bool may_become(std::string_view s, std::size_t pos, std::string_view marker) {
    const auto rest = s.substr(pos);
    return rest.size() < marker.size() && marker.starts_with(rest);
}

std::optional<json::value> parse_json(std::string_view text) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec) {
        return std::nullopt;
    }
    return v;
}

block_result malformed(std::size_t length) {
    return block_result{block_status::malformed, length == 0 ? 1 : length, {}};
}

block_result unfinished(std::string_view text, bool at_end) {
    return at_end ? malformed(text.size()) : block_result{};
}

block_result complete(std::size_t length, std::vector<parsed_tool_call> calls) {
    return block_result{block_status::complete, length, std::move(calls)};
}

/// The declared JSON type of `parameter` in `function`'s schema ("" when unknown).
std::string_view declared_type(std::string_view function, std::string_view parameter, const json::array& tools) {
    for (const auto& t : tools) {
        const auto* fn = t.is_object() ? t.get_object().if_contains("function") : nullptr;
        if (fn == nullptr || !fn->is_object()) {
            continue;
        }
        const auto* name = fn->get_object().if_contains("name");
        if (name == nullptr || !name->is_string() || name->get_string() != function) {
            continue;
        }
        const auto* params = fn->get_object().if_contains("parameters");
        const auto* props = params && params->is_object() ? params->get_object().if_contains("properties") : nullptr;
        const auto* p = props && props->is_object() ? props->get_object().if_contains(parameter) : nullptr;
        const auto* type = p && p->is_object() ? p->get_object().if_contains("type") : nullptr;
        if (type != nullptr && type->is_string()) {
            return type->get_string();
        }
        return {};
    }
    return {};
}

/// {"name": .., "arguments"|"parameters": {..}} as a call.
bool read_json_call(const json::value& v, parsed_tool_call& out) {
    if (!v.is_object()) {
        return false;
    }
    const auto& o = v.get_object();
    const auto* name = o.if_contains("name");
    const auto* args = o.if_contains("arguments");
    if (args == nullptr) {
        args = o.if_contains("parameters");
    }
    if (name == nullptr || !name->is_string()) {
        return false;
    }
    if (args == nullptr) {
        return make_call(name->get_string(), "{}", out);
    }
    return make_call(name->get_string(), args->is_string() ? std::string(args->get_string()) : json::serialize(*args),
                     out);
}

/// Qwen3-Coder: <function=name>\n<parameter=k>\nvalue\n</parameter>\n</function>
bool read_function_xml(std::string_view body, const json::array& tools, parsed_tool_call& out) {
    constexpr std::string_view fn_open = "<function=";
    constexpr std::string_view fn_close = "</function>";
    constexpr std::string_view p_open = "<parameter=";
    constexpr std::string_view p_close = "</parameter>";
    const auto name_end = body.find('>');
    if (!body.starts_with(fn_open) || name_end == npos) {
        return false;
    }
    const std::string_view name = trim(body.substr(fn_open.size(), name_end - fn_open.size()));
    json::object args;
    std::size_t pos = name_end + 1;
    for (;;) {
        pos = skip_space(body, pos);
        if (body.substr(pos).starts_with(fn_close)) {
            break;
        }
        if (!body.substr(pos).starts_with(p_open)) {
            return false;
        }
        const auto key_end = body.find('>', pos);
        const auto value_end = body.find(p_close, pos);
        if (key_end == npos || value_end == npos || value_end < key_end) {
            return false;
        }
        const std::string_view key = trim(body.substr(pos + p_open.size(), key_end - pos - p_open.size()));
        std::string_view value = body.substr(key_end + 1, value_end - key_end - 1);
        if (value.starts_with('\n')) {
            value.remove_prefix(1);
        }
        if (value.ends_with('\n')) {
            value.remove_suffix(1);
        }
        args[key] = parameter_value(name, key, value, tools);
        pos = value_end + p_close.size();
    }
    return make_call(name, json::serialize(args), out);
}

/// GLM-4.5: name<arg_key>k</arg_key><arg_value>v</arg_value>...
bool read_arg_pairs(std::string_view body, const json::array& tools, parsed_tool_call& out) {
    constexpr std::string_view k_open = "<arg_key>";
    constexpr std::string_view k_close = "</arg_key>";
    constexpr std::string_view v_open = "<arg_value>";
    constexpr std::string_view v_close = "</arg_value>";
    std::size_t pos = body.find(k_open);
    const std::string_view name = trim(body.substr(0, pos));
    if (name.empty() || name.find_first_of("<>{}\n") != npos) {
        return false;
    }
    json::object args;
    while (pos != npos && pos < body.size()) {
        pos = skip_space(body, pos);
        if (pos == body.size()) {
            break;
        }
        const auto key_end = body.find(k_close, pos);
        if (!body.substr(pos).starts_with(k_open) || key_end == npos) {
            return false;
        }
        const std::string_view key = trim(body.substr(pos + k_open.size(), key_end - pos - k_open.size()));
        pos = skip_space(body, key_end + k_close.size());
        const auto value_end = body.find(v_close, pos);
        if (!body.substr(pos).starts_with(v_open) || value_end == npos) {
            return false;
        }
        const std::string_view value = body.substr(pos + v_open.size(), value_end - pos - v_open.size());
        args[key] = parameter_value(name, key, value, tools);
        pos = value_end + v_close.size();
    }
    return make_call(name, json::serialize(args), out);
}

/// <tool_call> ... </tool_call> holding Hermes JSON, Qwen3-Coder XML or GLM pairs (told apart by the body).
block_result read_tool_call_tag(std::string_view text, bool at_end, const json::array& tools) {
    constexpr std::string_view open = "<tool_call>";
    constexpr std::string_view close = "</tool_call>";
    const auto end = text.find(close, open.size());
    if (end == npos) {
        return unfinished(text, at_end);
    }
    const std::string_view body = trim(text.substr(open.size(), end - open.size()));
    const std::size_t length = end + close.size();
    parsed_tool_call call;
    bool ok = false;
    if (body.starts_with('{')) {
        const auto v = parse_json(body);
        ok = v && read_json_call(*v, call);
    } else if (body.starts_with("<function=")) {
        ok = read_function_xml(body, tools, call);
    } else {
        ok = read_arg_pairs(body, tools, call);
    }
    return ok ? complete(length, {std::move(call)}) : malformed(length);
}

/// Sections of calls between fixed markers (DeepSeek V3, Kimi-K2): `read_one` reads one call's inner text.
template <typename ReadOne>
block_result read_call_section(std::string_view text, bool at_end, std::string_view open, std::string_view close,
                               std::string_view call_open, std::string_view call_close, ReadOne read_one) {
    std::vector<parsed_tool_call> calls;
    std::size_t pos = open.size();
    for (;;) {
        pos = skip_space(text, pos);
        const auto rest = text.substr(pos);
        if (rest.starts_with(close)) {
            return calls.empty() ? malformed(pos + close.size()) : complete(pos + close.size(), std::move(calls));
        }
        if (rest.starts_with(call_open)) {
            const auto end = text.find(call_close, pos);
            if (end == npos) {
                break; // the call is still being written
            }
            parsed_tool_call call;
            if (!read_one(text.substr(pos + call_open.size(), end - pos - call_open.size()), call)) {
                return malformed(end + call_close.size());
            }
            calls.push_back(std::move(call));
            pos = end + call_close.size();
            continue;
        }
        if (!at_end && (may_become(text, pos, close) || may_become(text, pos, call_open))) {
            return {};
        }
        if (calls.empty()) {
            return malformed(at_end ? text.size() : pos);
        }
        return complete(pos, std::move(calls)); // the section's end marker is missing: what follows is content
    }
    if (!at_end) {
        return {};
    }
    return calls.empty() ? malformed(text.size()) : complete(pos, std::move(calls));
}

/// DeepSeek V3 / R1: function<｜tool▁sep｜>name\n```json\n{..}\n``` (V3.1 writes name<｜tool▁sep｜>{..}).
bool read_deepseek_call(std::string_view inner, parsed_tool_call& out) {
    constexpr std::string_view sep = "<｜tool▁sep｜>";
    const auto at = inner.find(sep);
    if (at == npos) {
        return false;
    }
    std::string_view before = trim(inner.substr(0, at));
    std::string_view after = inner.substr(at + sep.size());
    std::string_view name = before;
    if (before.empty() || before == "function") {
        const auto nl = after.find('\n');
        name = trim(after.substr(0, nl));
        after = nl == npos ? std::string_view() : after.substr(nl + 1);
    }
    after = trim(after);
    if (after.starts_with("```")) {
        const auto nl = after.find('\n');
        after = nl == npos ? std::string_view() : after.substr(nl + 1);
        if (after.ends_with("```")) {
            after.remove_suffix(3);
        }
    }
    return make_call(name, trim(after), out);
}

/// Kimi-K2: functions.name:0<|tool_call_argument_begin|>{..}
bool read_kimi_call(std::string_view inner, parsed_tool_call& out) {
    constexpr std::string_view arg = "<|tool_call_argument_begin|>";
    const auto at = inner.find(arg);
    if (at == npos) {
        return false;
    }
    std::string_view id = trim(inner.substr(0, at));
    if (const auto dot = id.find('.'); dot != npos) {
        id.remove_prefix(dot + 1);
    }
    if (const auto colon = id.rfind(':'); colon != npos) {
        id = id.substr(0, colon);
    }
    return make_call(id, trim(inner.substr(at + arg.size())), out);
}

/// Mistral: [TOOL_CALLS][{..}, ..] (Nemo) or [TOOL_CALLS]name[ARGS]{..} (Devstral, Ministral 3).
block_result read_mistral(std::string_view text, bool at_end) {
    constexpr std::string_view open = "[TOOL_CALLS]";
    constexpr std::string_view args_marker = "[ARGS]";
    std::size_t pos = skip_space(text, open.size());
    if (pos == text.size()) {
        return unfinished(text, at_end);
    }
    std::vector<parsed_tool_call> calls;
    if (text[pos] == '[') {
        const auto n = json_extent(text.substr(pos));
        if (n == npos) {
            return unfinished(text, at_end);
        }
        const auto v = parse_json(text.substr(pos, n));
        if (!v || !v->is_array() || v->get_array().empty()) {
            return malformed(pos + n);
        }
        for (const auto& item : v->get_array()) {
            parsed_tool_call call;
            if (!read_json_call(item, call)) {
                return malformed(pos + n);
            }
            calls.push_back(std::move(call));
        }
        return complete(pos + n, std::move(calls));
    }
    const auto args_at = text.find(args_marker, pos);
    if (args_at == npos) {
        const bool plausible = text.size() - pos < 128 && text.find_first_of("{\n", pos) == npos;
        return plausible ? unfinished(text, at_end) : malformed(at_end ? text.size() : pos);
    }
    std::string_view name = trim(text.substr(pos, args_at - pos));
    if (const auto id = name.find("[CALL_ID]"); id != npos) {
        name = trim(name.substr(0, id));
    }
    const std::size_t json_at = skip_space(text, args_at + args_marker.size());
    if (json_at == text.size()) {
        return unfinished(text, at_end);
    }
    if (text[json_at] != '{') {
        return malformed(json_at);
    }
    const auto n = json_extent(text.substr(json_at));
    if (n == npos) {
        return unfinished(text, at_end);
    }
    parsed_tool_call call;
    if (!make_call(name, text.substr(json_at, n), call)) {
        return malformed(json_at + n);
    }
    return complete(json_at + n, {std::move(call)});
}

/// Llama 3.x: {"name": .., "parameters": {..}}, possibly after <|python_tag|>.
block_result read_llama3(std::string_view text, bool at_end) {
    constexpr std::string_view tag = "<|python_tag|>";
    std::size_t pos = text.starts_with(tag) ? skip_space(text, tag.size()) : 0;
    if (pos == text.size()) {
        return unfinished(text, at_end);
    }
    if (text[pos] != '{') {
        return malformed(at_end ? text.size() : pos); // a built-in tool's python call: left as content
    }
    const auto n = json_extent(text.substr(pos));
    if (n == npos) {
        return unfinished(text, at_end);
    }
    const auto v = parse_json(text.substr(pos, n));
    parsed_tool_call call;
    if (!v || !read_json_call(*v, call)) {
        return malformed(pos + n);
    }
    return complete(pos + n, {std::move(call)});
}

constexpr std::array<std::string_view, 1> tag_openers{"<tool_call>"};
constexpr std::array<std::string_view, 1> deepseek_openers{"<｜tool▁calls▁begin｜>"};
constexpr std::array<std::string_view, 1> kimi_openers{"<|tool_calls_section_begin|>"};
constexpr std::array<std::string_view, 1> mistral_openers{"[TOOL_CALLS]"};
constexpr std::array<std::string_view, 1> llama_openers{"<|python_tag|>"};

} // namespace

std::span<const std::string_view> block_openers(tool_format f) noexcept {
    switch (f) {
    case tool_format::hermes:
    case tool_format::qwen3_coder:
    case tool_format::glm45:
        return tag_openers;
    case tool_format::deepseek_v3:
        return deepseek_openers;
    case tool_format::kimi_k2:
        return kimi_openers;
    case tool_format::mistral:
        return mistral_openers;
    case tool_format::llama3:
        return llama_openers;
    case tool_format::none:
    case tool_format::harmony:
        break;
    }
    return {};
}

block_result read_block(tool_format f, std::string_view text, bool at_end, const json::array& tools) {
    switch (f) {
    case tool_format::hermes:
    case tool_format::qwen3_coder:
    case tool_format::glm45:
        return read_tool_call_tag(text, at_end, tools);
    case tool_format::deepseek_v3:
        return read_call_section(text, at_end, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
                                 "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", read_deepseek_call);
    case tool_format::kimi_k2:
        return read_call_section(text, at_end, "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                                 "<|tool_call_begin|>", "<|tool_call_end|>", read_kimi_call);
    case tool_format::mistral:
        return read_mistral(text, at_end);
    case tool_format::llama3:
        return read_llama3(text, at_end);
    case tool_format::none:
    case tool_format::harmony:
        break;
    }
    return malformed(text.size());
}

std::size_t json_extent(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if ((c == '}' || c == ']') && --depth <= 0) {
            return i + 1;
        }
    }
    return npos;
}

json::value parameter_value(std::string_view function, std::string_view parameter, std::string_view value,
                            const json::array& tools) {
    if (declared_type(function, parameter, tools) == "string") {
        return json::string(value);
    }
    if (auto v = parse_json(trim(value))) {
        return std::move(*v);
    }
    return json::string(value);
}

bool make_call(std::string_view name, std::string_view arguments, parsed_tool_call& out) {
    name = trim(name);
    if (name.empty()) {
        return false;
    }
    auto v = parse_json(trim(arguments));
    if (v && v->is_string()) {
        v = parse_json(v->get_string());
    }
    if (!v || !v->is_object()) {
        return false;
    }
    out.name = std::string(name);
    out.arguments = json::serialize(*v);
    return true;
}

} // namespace sluice::chat::detail
