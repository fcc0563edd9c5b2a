// Request-body parsing for /v1/chat/completions and /v1/completions: types, ranges and unsupported fields.
#include "server/openai_request.hpp"

#include "server/structured_output.hpp"

#include "runtime/generate/sampler.hpp"
#include "runtime/generate/stop_strings.hpp"
#include "server/json_body.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <sstream>

namespace sluice::server {
namespace {

namespace json = boost::json;
using maybe_error = std::optional<api_error>;

constexpr std::int64_t max_int32 = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t max_choices = 128;     ///< OpenAI's limit on n
constexpr std::int64_t max_top_logprobs = 20; ///< OpenAI's limit on top_logprobs

std::string show(double d) {
    std::ostringstream s;
    s << d;
    return s.str();
}

api_error wrong_type(std::string_view field, std::string_view expected, const json::value& got) {
    return bad_request(std::string(field) + " must be " + std::string(expected) + ", got " +
                           std::string(json_kind_name(got)),
                       std::string(field), "invalid_type");
}

/// The field's value, or nullptr when absent or null (null means "default", as OpenAI clients send it).
const json::value* find(const json::object& o, std::string_view key) {
    const auto it = o.find(key);
    return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

maybe_error read_float(const json::object& o, std::string_view key, double lo, double hi, float& out) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_number()) {
        return wrong_type(key, "a number", *v);
    }
    const double d = v->to_number<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
        return bad_request(std::string(key) + " must be in [" + show(lo) + ", " + show(hi) + "], got " + show(d),
                           std::string(key), "out_of_range");
    }
    out = static_cast<float>(d);
    return std::nullopt;
}

maybe_error read_int(const json::object& o, std::string_view key, std::int64_t lo, std::int64_t hi,
                     std::optional<std::int64_t>& out) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    std::int64_t n = 0;
    if (v->is_int64()) {
        n = v->get_int64();
    } else if (v->is_uint64()) {
        n = std::numeric_limits<std::int64_t>::max(); // beyond every range below
    } else if (v->is_double()) {
        return bad_request(std::string(key) + " must be an integer, got " + show(v->get_double()), std::string(key),
                           "invalid_type");
    } else {
        return wrong_type(key, "an integer", *v);
    }
    if (n < lo || n > hi) {
        return bad_request(std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]",
                           std::string(key), "out_of_range");
    }
    out = n;
    return std::nullopt;
}

maybe_error read_bool(const json::object& o, std::string_view key, bool& out) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_bool()) {
        return wrong_type(key, "a boolean", *v);
    }
    out = v->get_bool();
    return std::nullopt;
}

maybe_error read_string(const json::object& o, std::string_view key, std::string& out) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_string()) {
        return wrong_type(key, "a string", *v);
    }
    out = std::string(v->get_string());
    return std::nullopt;
}

/// The first key of `o` not in `allowed`, reported as unsupported.
maybe_error reject_unknown(const json::object& o, std::span<const std::string_view> allowed, std::string_view prefix) {
    for (const auto& kv : o) {
        if (std::find(allowed.begin(), allowed.end(), kv.key()) == allowed.end()) {
            const std::string name = std::string(prefix) + std::string(kv.key());
            return bad_request("Unrecognized request argument supplied: " + name, name, "unknown_field");
        }
    }
    return std::nullopt;
}

/// String content, or the text parts of an array joined with "\n" (templates expect a string).
api_result<std::string> read_content(const json::value& v, const std::string& where) {
    if (v.is_string()) {
        return std::string(v.get_string());
    }
    if (!v.is_array()) {
        return wrong_type(where, "a string or an array of text parts", v);
    }
    std::string text;
    const auto& parts = v.get_array();
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string at = where + "[" + std::to_string(i) + "]";
        if (!parts[i].is_object()) {
            return wrong_type(at, "an object", parts[i]);
        }
        const auto& part = parts[i].get_object();
        static constexpr std::array<std::string_view, 2> part_keys{"type", "text"};
        if (auto e = reject_unknown(part, part_keys, at + ".")) {
            return *e;
        }
        const auto* type = find(part, "type");
        if (type == nullptr || !type->is_string() || type->get_string() != "text") {
            return bad_request(at + ".type must be \"text\" (other content parts are not supported)", at + ".type",
                               "unsupported_value");
        }
        const auto* t = find(part, "text");
        if (t == nullptr || !t->is_string()) {
            return wrong_type(at + ".text", "a string", t ? *t : json::value());
        }
        if (i > 0) {
            text += '\n';
        }
        text += t->get_string();
    }
    return text;
}

/// A previous turn's tool calls for the template: `function.arguments` sent as a JSON string (as OpenAI returns
/// it) becomes the object it holds, since templates iterate it (`arguments|items`) or print it with tojson.
json::array history_tool_calls(const json::array& calls) {
    json::array out = calls;
    for (auto& call : out) {
        auto* fn = call.is_object() ? call.get_object().if_contains("function") : nullptr;
        auto* args = fn && fn->is_object() ? fn->get_object().if_contains("arguments") : nullptr;
        if (args == nullptr || !args->is_string()) {
            continue;
        }
        boost::system::error_code ec;
        auto parsed = json::parse(args->get_string(), ec);
        if (!ec && parsed.is_object()) {
            *args = std::move(parsed);
        }
    }
    return out;
}

api_result<json::object> read_message(const json::value& v, std::size_t index) {
    const std::string where = "messages[" + std::to_string(index) + "]";
    if (!v.is_object()) {
        return wrong_type(where, "an object", v);
    }
    const auto& in = v.get_object();
    // refusal, annotations and parsed are fields of a returned message (parsed is added by the openai SDK's parse()
    // helper): a client that appends the message it got to its history sends them back; they are ignored.
    static constexpr std::array<std::string_view, 9> keys{"role",         "content",      "name",
                                                          "tool_calls",   "tool_call_id", "reasoning_content",
                                                          "refusal",      "annotations",  "parsed"};
    if (auto e = reject_unknown(in, keys, where + ".")) {
        return *e;
    }
    const auto* role = find(in, "role");
    if (role == nullptr || !role->is_string()) {
        return role ? wrong_type(where + ".role", "a string", *role)
                    : bad_request(where + ".role is required", where + ".role", "missing_field");
    }
    std::string r(role->get_string());
    if (r == "developer") {
        r = "system";
    }
    if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
        return bad_request(where + ".role must be one of system, developer, user, assistant, tool; got '" +
                               std::string(role->get_string()) + "'",
                           where + ".role", "unsupported_value");
    }
    json::object out;
    out["role"] = r;
    const auto* content = find(in, "content");
    const auto* tool_calls = find(in, "tool_calls");
    if (content != nullptr) {
        auto text = read_content(*content, where + ".content");
        if (!text) {
            return text.error();
        }
        out["content"] = *text;
    } else if (r == "assistant" && tool_calls != nullptr) {
        out["content"] = "";
    } else {
        return bad_request(where + ".content is required", where + ".content", "missing_field");
    }
    if (tool_calls != nullptr) {
        if (r != "assistant" || !tool_calls->is_array()) {
            return bad_request(where + ".tool_calls must be an array on an assistant message", where + ".tool_calls",
                               "invalid_type");
        }
        out["tool_calls"] = history_tool_calls(tool_calls->get_array());
    }
    if (const auto* reasoning = find(in, "reasoning_content")) {
        if (r != "assistant" || !reasoning->is_string()) {
            return bad_request(where + ".reasoning_content must be a string on an assistant message",
                               where + ".reasoning_content", "invalid_type");
        }
        // Qwen-style templates read reasoning_content; gpt-oss's reads thinking.
        out["reasoning_content"] = *reasoning;
        out["thinking"] = *reasoning;
    }
    for (const std::string_view key : {"name", "tool_call_id"}) {
        if (const auto* s = find(in, key)) {
            if (!s->is_string()) {
                return wrong_type(where + "." + std::string(key), "a string", *s);
            }
            out[key] = *s;
        }
    }
    return out;
}

maybe_error read_messages(const json::object& o, generate_request& g) {
    const auto* v = find(o, "messages");
    if (v == nullptr) {
        return bad_request("messages is required", "messages", "missing_field");
    }
    if (!v->is_array()) {
        return wrong_type("messages", "an array", *v);
    }
    if (v->get_array().empty()) {
        return bad_request("messages must not be empty", "messages", "invalid_value");
    }
    for (std::size_t i = 0; i < v->get_array().size(); ++i) {
        auto m = read_message(v->get_array()[i], i);
        if (!m) {
            return m.error();
        }
        g.messages.push_back(std::move(*m));
    }
    return std::nullopt;
}

/// tool_choice: "auto" (the default), "none" (the tools are not rendered and nothing is parsed as a call),
/// "required" (`forced` empty) and {"type": "function", "function": {"name"}} (`forced` the name): a call is
/// enforced by a grammar (server/structured_output's apply_tool_choice).
maybe_error read_tool_choice(const json::object& o, std::string& choice, std::optional<std::string>& forced) {
    const auto* c = find(o, "tool_choice");
    if (c == nullptr) {
        return std::nullopt;
    }
    if (c->is_string() && (c->get_string() == "auto" || c->get_string() == "none")) {
        choice = std::string(c->get_string());
        return std::nullopt;
    }
    if (c->is_string() && c->get_string() == "required") {
        forced = std::string();
        return std::nullopt;
    }
    if (c->is_object()) {
        const auto* type = find(c->get_object(), "type");
        const auto* fn = find(c->get_object(), "function");
        const auto* name = fn != nullptr && fn->is_object() ? find(fn->get_object(), "name") : nullptr;
        if (type == nullptr || !type->is_string() || type->get_string() != "function" || name == nullptr ||
            !name->is_string() || name->get_string().empty()) {
            return bad_request("tool_choice must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                               "tool_choice.function.name", "invalid_value");
        }
        forced = std::string(name->get_string());
        return std::nullopt;
    }
    return bad_request("tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", ...}",
                       "tool_choice", "invalid_value");
}

/// A forced call needs tools, and a named one must be among them.
maybe_error check_forced_tool(const completion_request& out) {
    if (!out.forced_tool) {
        return std::nullopt;
    }
    if (out.tools.empty()) {
        return bad_request("tool_choice forces a call but the request has no tools", "tool_choice", "invalid_value");
    }
    if (out.forced_tool->empty()) {
        return std::nullopt;
    }
    for (const auto& t : out.tools) {
        if (t.at("function").at("name").get_string() == *out.forced_tool) {
            return std::nullopt;
        }
    }
    return bad_request("tool_choice names the function '" + *out.forced_tool + "', which is not among the tools",
                       "tool_choice.function.name", "invalid_value");
}

/// `tools` goes to the chat template as the variable `tools` (through template_kwargs) and to the tool-call
/// parser; tool_choice "none" leaves them out of both.
maybe_error read_tools(const json::object& o, completion_request& out) {
    std::string choice = "auto";
    if (auto e = read_tool_choice(o, choice, out.forced_tool)) {
        return e;
    }
    if (auto e = read_bool(o, "parallel_tool_calls", out.parallel_tool_calls)) {
        return e;
    }
    const auto* tools = find(o, "tools");
    if (tools == nullptr) {
        return check_forced_tool(out);
    }
    if (!tools->is_array()) {
        return wrong_type("tools", "an array", *tools);
    }
    for (std::size_t i = 0; i < tools->get_array().size(); ++i) {
        const auto& t = tools->get_array()[i];
        const std::string at = "tools[" + std::to_string(i) + "]";
        if (!t.is_object()) {
            return wrong_type(at, "an object", t);
        }
        const auto* type = find(t.get_object(), "type");
        const auto* fn = find(t.get_object(), "function");
        if (type == nullptr || !type->is_string() || type->get_string() != "function") {
            return bad_request(at + ".type must be \"function\"", at + ".type", "unsupported_value");
        }
        if (fn == nullptr || !fn->is_object() || find(fn->get_object(), "name") == nullptr ||
            !find(fn->get_object(), "name")->is_string()) {
            return bad_request(at + ".function must be an object with a string name", at + ".function", "invalid_type");
        }
    }
    if (choice != "none" && !tools->get_array().empty()) {
        out.generate.template_kwargs["tools"] = *tools;
        out.tools = tools->get_array();
        out.parse_tool_calls = true;
    }
    return check_forced_tool(out);
}

/// reasoning_effort (gpt-oss templates read it) and chat_template_kwargs, both chat-template variables; the
/// kwargs come last and win.
maybe_error read_template_options(const json::object& o, generate_request& g) {
    if (const auto* effort = find(o, "reasoning_effort")) {
        static constexpr std::array<std::string_view, 4> efforts{"minimal", "low", "medium", "high"};
        if (!effort->is_string() ||
            std::find(efforts.begin(), efforts.end(), std::string_view(effort->get_string())) == efforts.end()) {
            return bad_request("reasoning_effort must be one of \"minimal\", \"low\", \"medium\", \"high\"",
                               "reasoning_effort", "invalid_value");
        }
        g.template_kwargs["reasoning_effort"] = *effort;
    }
    const auto* kwargs = find(o, "chat_template_kwargs");
    if (kwargs == nullptr) {
        return std::nullopt;
    }
    if (!kwargs->is_object()) {
        return wrong_type("chat_template_kwargs", "an object", *kwargs);
    }
    static constexpr std::array<std::string_view, 5> reserved{"messages", "tools", "add_generation_prompt",
                                                              "bos_token", "eos_token"};
    for (const auto& kv : kwargs->get_object()) {
        if (std::find(reserved.begin(), reserved.end(), kv.key()) != reserved.end()) {
            const std::string name = "chat_template_kwargs." + std::string(kv.key());
            return bad_request(name + " is set by the server and cannot be overridden", name, "invalid_value");
        }
        g.template_kwargs[kv.key()] = kv.value();
    }
    return std::nullopt;
}

maybe_error read_prompt(const json::object& o, generate_request& g) {
    const auto* v = find(o, "prompt");
    if (v == nullptr) {
        return bad_request("prompt is required", "prompt", "missing_field");
    }
    if (v->is_array() && v->get_array().size() == 1 && v->get_array()[0].is_string()) {
        g.prompt = std::string(v->get_array()[0].get_string());
        return std::nullopt;
    }
    if (!v->is_string()) {
        return wrong_type("prompt", "a string", *v);
    }
    g.prompt = std::string(v->get_string());
    return std::nullopt;
}

maybe_error read_stop(const json::object& o, generate_request& g) {
    const auto* v = find(o, "stop");
    if (v == nullptr) {
        return std::nullopt;
    }
    if (v->is_string()) {
        g.stop.emplace_back(v->get_string());
    } else if (v->is_array()) {
        if (v->get_array().size() > 16) {
            return bad_request("stop has more than 16 entries", "stop", "out_of_range");
        }
        for (std::size_t i = 0; i < v->get_array().size(); ++i) {
            const auto& s = v->get_array()[i];
            if (!s.is_string()) {
                return wrong_type("stop[" + std::to_string(i) + "]", "a string", s);
            }
            g.stop.emplace_back(s.get_string());
        }
    } else {
        return wrong_type("stop", "a string or an array of strings", *v);
    }
    if (auto ok = runtime::validate_stops(g.stop); !ok) {
        return bad_request(ok.error().message, "stop", "invalid_value");
    }
    return std::nullopt;
}

/// n, logprobs and top_logprobs; the fields accepted only with the one value the server implements.
maybe_error read_choices_and_logprobs(const json::object& o, completion_request& out) {
    std::optional<std::int64_t> n;
    if (auto e = read_int(o, "n", 1, max_choices, n)) {
        return e;
    }
    out.n = n ? static_cast<std::uint32_t>(*n) : 1u;
    std::optional<std::int64_t> top;
    if (out.kind == completion_kind::completion) {
        std::optional<std::int64_t> best_of;
        if (auto e = read_int(o, "best_of", 1, 1, best_of)) {
            return bad_request("best_of: only 1 is supported", "best_of", "unsupported_value");
        }
        if (auto e = read_int(o, "logprobs", 0, max_top_logprobs, top)) {
            return e;
        }
        out.logprobs = top.has_value();
        out.top_logprobs = top ? static_cast<std::uint32_t>(*top) : 0u;
        if (find(o, "suffix") != nullptr) {
            return bad_request("suffix is not supported", "suffix", "unsupported_value");
        }
        bool echo = false;
        if (auto e = read_bool(o, "echo", echo)) {
            return e;
        }
        if (echo) {
            return bad_request("echo is not supported", "echo", "unsupported_value");
        }
    } else {
        if (auto e = read_bool(o, "logprobs", out.logprobs)) {
            return e;
        }
        if (auto e = read_int(o, "top_logprobs", 0, max_top_logprobs, top)) {
            return e;
        }
        if (top && !out.logprobs) {
            return bad_request("top_logprobs requires logprobs to be true", "top_logprobs", "invalid_value");
        }
        out.top_logprobs = top ? static_cast<std::uint32_t>(*top) : 0u;
    }
    out.generate.top_logprobs = out.top_logprobs;
    return std::nullopt;
}

maybe_error read_sampling(const json::object& o, generate_request& g, std::uint64_t random_seed) {
    auto& s = g.sampling;
    if (auto e = read_float(o, "temperature", 0.0, 2.0, s.temperature)) {
        return e;
    }
    if (auto e = read_float(o, "top_p", 0.0, 1.0, s.top_p)) {
        return e;
    }
    if (auto e = read_float(o, "min_p", 0.0, 1.0, s.min_p)) {
        return e;
    }
    if (auto e = read_float(o, "presence_penalty", -2.0, 2.0, s.presence_penalty)) {
        return e;
    }
    if (auto e = read_float(o, "frequency_penalty", -2.0, 2.0, s.frequency_penalty)) {
        return e;
    }
    if (auto e = read_float(o, "repeat_penalty", 0.0, 100.0, s.repeat_penalty)) {
        return e;
    }
    std::optional<std::int64_t> top_k;
    if (auto e = read_int(o, "top_k", -1, max_int32, top_k)) {
        return e;
    }
    if (top_k) {
        s.top_k = static_cast<std::int32_t>(*top_k);
    }
    std::optional<std::int64_t> seed;
    if (auto e = read_int(o, "seed", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                          seed)) {
        return e;
    }
    s.seed = seed && *seed != -1 ? static_cast<std::uint64_t>(*seed) : random_seed;
    if (auto ok = runtime::validate(s); !ok) {
        // The engine's messages start with the field name ("top_p must be in (0, 1], got 0").
        const auto& m = ok.error().message;
        return bad_request(m, m.substr(0, m.find(' ')), "out_of_range");
    }
    return std::nullopt;
}

maybe_error read_limits_and_stream(const json::object& o, completion_request& out) {
    std::optional<std::int64_t> max_tokens;
    if (auto e = read_int(o, "max_tokens", 1, max_int32, max_tokens)) {
        return e;
    }
    if (out.kind == completion_kind::chat) {
        std::optional<std::int64_t> max_completion;
        if (auto e = read_int(o, "max_completion_tokens", 1, max_int32, max_completion)) {
            return e;
        }
        if (max_completion) {
            max_tokens = max_completion;
        }
    }
    // OpenAI's defaults: chat runs to the end (or a full context), legacy completions stop after 16 tokens.
    out.generate.max_tokens =
        max_tokens ? static_cast<std::uint32_t>(*max_tokens) : (out.kind == completion_kind::chat ? 0u : 16u);
    if (auto e = read_bool(o, "ignore_eos", out.generate.ignore_eos)) { // llama.cpp's extension
        return e;
    }
    if (auto e = read_bool(o, "stream", out.stream)) {
        return e;
    }
    if (const auto* so = find(o, "stream_options")) {
        if (!so->is_object()) {
            return wrong_type("stream_options", "an object", *so);
        }
        if (!out.stream) {
            return bad_request("stream_options is only allowed when stream is true", "stream_options", "invalid_value");
        }
        static constexpr std::array<std::string_view, 1> keys{"include_usage"};
        if (auto e = reject_unknown(so->get_object(), keys, "stream_options.")) {
            return e;
        }
        if (auto e = read_bool(so->get_object(), "include_usage", out.include_usage)) {
            e->message = "stream_options." + e->message;
            e->param = "stream_options.include_usage";
            return e;
        }
    }
    return std::nullopt;
}

/// Sluice's extension: {"speculative": {"mode": "off" | "lookup" | "draft" | "mtp", "max_draft": K}}
/// (docs/SERVER.md).
maybe_error read_speculative(const json::object& o, generate_request& g) {
    const auto* v = find(o, "speculative");
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_object()) {
        return wrong_type("speculative", "an object", *v);
    }
    const auto& so = v->get_object();
    static constexpr std::array<std::string_view, 3> keys{"mode", "max_draft", "adaptive"};
    if (auto e = reject_unknown(so, keys, "speculative.")) {
        return e;
    }
    std::string mode;
    if (auto e = read_string(so, "mode", mode)) {
        e->message = "speculative." + e->message;
        e->param = "speculative.mode";
        return e;
    }
    if (find(so, "mode") != nullptr) {
        const auto parsed = parse_speculative_mode(mode);
        if (!parsed) {
            return bad_request("speculative.mode must be \"off\", \"lookup\", \"draft\" or \"mtp\", got \"" + mode +
                                   "\"",
                               "speculative.mode", "invalid_value");
        }
        g.speculative.mode = *parsed;
    }
    std::optional<std::int64_t> max_draft;
    if (auto e = read_int(so, "max_draft", 1, 64, max_draft)) {
        e->message = "speculative." + e->message;
        e->param = "speculative.max_draft";
        return e;
    }
    if (max_draft) {
        g.speculative.max_draft = static_cast<std::uint32_t>(*max_draft);
    }
    bool adaptive = true;
    if (auto e = read_bool(so, "adaptive", adaptive)) {
        e->message = "speculative." + e->message;
        e->param = "speculative.adaptive";
        return e;
    }
    if (find(so, "adaptive") != nullptr) {
        g.speculative.adaptive = adaptive;
    }
    return std::nullopt;
}

constexpr std::array<std::string_view, 28> chat_keys{"speculative",
                                                     "ignore_eos",
                                                     "grammar",
                                                     "chat_template_kwargs",
                                                     "reasoning_effort",
                                                     "model",
                                                     "messages",
                                                     "max_tokens",
                                                     "max_completion_tokens",
                                                     "temperature",
                                                     "top_p",
                                                     "top_k",
                                                     "min_p",
                                                     "seed",
                                                     "stop",
                                                     "presence_penalty",
                                                     "frequency_penalty",
                                                     "repeat_penalty",
                                                     "stream",
                                                     "stream_options",
                                                     "tools",
                                                     "tool_choice",
                                                     "parallel_tool_calls",
                                                     "user",
                                                     "n",
                                                     "logprobs",
                                                     "top_logprobs",
                                                     "response_format"};

constexpr std::array<std::string_view, 24> completion_keys{"speculative",
                                                           "ignore_eos",
                                                           "grammar",
                                                           "response_format",
                                                           "model",
                                                           "prompt",
                                                           "max_tokens",
                                                           "temperature",
                                                           "top_p",
                                                           "top_k",
                                                           "min_p",
                                                           "seed",
                                                           "stop",
                                                           "presence_penalty",
                                                           "frequency_penalty",
                                                           "repeat_penalty",
                                                           "stream",
                                                           "stream_options",
                                                           "user",
                                                           "n",
                                                           "logprobs",
                                                           "echo",
                                                           "suffix",
                                                           "best_of"};

} // namespace

api_result<completion_request> parse_completion_request(std::string_view body, completion_kind kind,
                                                        std::uint64_t random_seed) {
    auto parsed = parse_json_object(body);
    if (!parsed) {
        return parsed.error();
    }
    const auto& o = *parsed;
    completion_request out;
    out.kind = kind;
    const bool chat = kind == completion_kind::chat;
    if (auto e = chat ? reject_unknown(o, chat_keys, "") : reject_unknown(o, completion_keys, "")) {
        return *e;
    }
    std::string user;
    if (auto e = read_string(o, "model", out.model)) {
        return *e;
    }
    if (auto e = read_string(o, "user", user)) {
        return *e;
    }
    if (auto e = chat ? read_messages(o, out.generate) : read_prompt(o, out.generate)) {
        return *e;
    }
    if (chat) {
        if (auto e = read_tools(o, out)) {
            return *e;
        }
        if (auto e = read_template_options(o, out.generate)) {
            return *e;
        }
    }
    if (auto e = read_choices_and_logprobs(o, out)) {
        return *e;
    }
    if (auto e = read_structured_output(o, out)) {
        return *e;
    }
    if (auto e = read_sampling(o, out.generate, random_seed)) {
        return *e;
    }
    if (auto e = read_stop(o, out.generate)) {
        return *e;
    }
    if (auto e = read_limits_and_stream(o, out)) {
        return *e;
    }
    if (auto e = read_speculative(o, out.generate)) {
        return *e;
    }
    return out;
}

} // namespace sluice::server
