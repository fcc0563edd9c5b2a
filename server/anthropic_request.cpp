// Messages API request bodies to the chat route's request: field checks, content blocks to OpenAI-form
// messages, tools to functions.
#include "server/anthropic_request.hpp"
#include "server/json_body.hpp"
#include "server/structured_output.hpp"

#include "runtime/generate/sampler.hpp"
#include "runtime/generate/stop_strings.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>

namespace sluice::server {
namespace {

namespace json = boost::json;
using maybe_error = std::optional<api_error>;

constexpr std::int64_t max_int32 = std::numeric_limits<std::int32_t>::max();

/// The documented top-level fields, and those Claude Code sends beyond them (accepted, ignored).
constexpr std::array<std::string_view, 18> create_keys{
    "model",    "max_tokens",   "messages",      "system",        "stop_sequences", "temperature",
    "top_p",    "top_k",        "stream",        "tools",         "tool_choice",    "thinking",
    "metadata", "service_tier", "cache_control", "inference_geo", "output_config",  "context_management"};
constexpr std::array<std::string_view, 9> count_keys{"model",         "messages",      "system",
                                                     "tools",         "tool_choice",   "thinking",
                                                     "cache_control", "output_config", "context_management"};
/// Fields of a custom tool; everything but name, description and input_schema is accepted and ignored.
constexpr std::array<std::string_view, 10> tool_keys{
    "name",          "description",           "input_schema",   "type",   "cache_control",
    "defer_loading", "eager_input_streaming", "input_examples", "strict", "allowed_callers"};

api_error wrong_type(const std::string& field, std::string_view expected, const json::value& got) {
    return bad_request(field + ": must be " + std::string(expected) + ", got " + std::string(json_kind_name(got)),
                       field, "invalid_type");
}

api_error missing(const std::string& field) {
    return bad_request(field + ": Field required", field, "missing_field");
}

api_error unsupported(const std::string& field, const std::string& why) {
    return bad_request(field + ": " + why, field, "unsupported_value");
}

/// The field's value, or nullptr when absent or null.
const json::value* find(const json::object& o, std::string_view key) {
    const auto it = o.find(key);
    return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

/// The block's "type" string ("" when missing or not a string).
std::string_view block_type(const json::object& block) {
    const auto* t = find(block, "type");
    return t != nullptr && t->is_string() ? std::string_view(t->get_string()) : std::string_view();
}

maybe_error reject_unknown(const json::object& o, std::span<const std::string_view> allowed,
                           const std::string& prefix) {
    for (const auto& kv : o) {
        if (std::find(allowed.begin(), allowed.end(), kv.key()) == allowed.end()) {
            const std::string name = prefix + std::string(kv.key());
            return bad_request(name + ": Extra inputs are not permitted", name, "unknown_field");
        }
    }
    return std::nullopt;
}

/// A number in [0, 1] (the API's range of temperature and top_p).
maybe_error read_unit(const json::object& o, std::string_view key, float& out) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_number()) {
        return wrong_type(std::string(key), "a number", *v);
    }
    const double d = v->to_number<double>();
    if (!std::isfinite(d) || d < 0.0 || d > 1.0) {
        return bad_request(std::string(key) + ": must be in [0, 1]", std::string(key), "out_of_range");
    }
    out = static_cast<float>(d);
    return std::nullopt;
}

/// An integer in [lo, hi]; nullopt when absent.
api_result<std::optional<std::int64_t>> read_integer(const json::object& o, std::string_view key, std::int64_t lo,
                                                     std::int64_t hi, const std::string& where) {
    const auto* v = find(o, key);
    if (v == nullptr) {
        return std::optional<std::int64_t>{};
    }
    if (!v->is_int64() && !v->is_uint64()) {
        return wrong_type(where, "an integer", *v);
    }
    const std::int64_t n = v->is_int64() ? v->get_int64() : std::numeric_limits<std::int64_t>::max();
    if (n < lo || n > hi) {
        return bad_request(where + ": must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                           where, "out_of_range");
    }
    return std::optional<std::int64_t>(n);
}

/// A block that needs an input this server does not have (images, documents) or a server-side feature.
api_error unsupported_block(std::string_view type, const std::string& at) {
    if (type == "image" || type == "document") {
        return unsupported(at + ".type",
                           std::string(type) + " content is not supported: the served model reads text only");
    }
    return unsupported(at + ".type", "content blocks of type '" + std::string(type) + "' are not supported");
}

/// The text of a text block at `at`.
api_result<std::string> text_of(const json::object& block, const std::string& at) {
    const auto* t = find(block, "text");
    if (t == nullptr) {
        return missing(at + ".text");
    }
    if (!t->is_string()) {
        return wrong_type(at + ".text", "a string", *t);
    }
    return std::string(t->get_string());
}

/// A string, or an array of text blocks joined with "\n" (system prompts, tool results).
api_result<std::string> read_text(const json::value& v, const std::string& where) {
    if (v.is_string()) {
        return std::string(v.get_string());
    }
    if (!v.is_array()) {
        return wrong_type(where, "a string or an array of text blocks", v);
    }
    std::string out;
    for (std::size_t i = 0; i < v.get_array().size(); ++i) {
        const auto& b = v.get_array()[i];
        const std::string at = where + "." + std::to_string(i);
        if (!b.is_object()) {
            return wrong_type(at, "an object", b);
        }
        if (block_type(b.get_object()) != "text") {
            return unsupported_block(block_type(b.get_object()), at);
        }
        auto t = text_of(b.get_object(), at);
        if (!t) {
            return t.error();
        }
        out += (i > 0 ? "\n" : "") + *t;
    }
    return out;
}

/// One message's blocks, gathered for the OpenAI-form messages.
struct gathered {
    std::string text;
    std::string reasoning;
    json::array calls;
};

/// Builds the OpenAI-form message list: tool names are remembered by tool_use id for the "tool" messages.
class translation {
public:
    explicit translation(json::array& out) : out_(out) {}
    maybe_error user(const json::value& content, const std::string& where);
    api_result<gathered> assistant(const json::value& content, const std::string& where);
    void flush_user(std::string& text);

private:
    maybe_error tool_result(const json::object& block, const std::string& at, std::string& text);
    json::array& out_;
    std::map<std::string, std::string, std::less<>> tool_names_;
};

void translation::flush_user(std::string& text) {
    out_.push_back(json::object{{"role", "user"}, {"content", text}});
    text.clear();
}

maybe_error translation::tool_result(const json::object& block, const std::string& at, std::string& text) {
    if (!text.empty()) {
        flush_user(text); // text before a result keeps its place
    }
    const auto* id = find(block, "tool_use_id");
    if (id == nullptr || !id->is_string()) {
        return id ? wrong_type(at + ".tool_use_id", "a string", *id) : missing(at + ".tool_use_id");
    }
    std::string result;
    if (const auto* c = find(block, "content")) {
        auto t = read_text(*c, at + ".content");
        if (!t) {
            return t.error();
        }
        result = std::move(*t);
    }
    const auto* is_error = find(block, "is_error");
    if (is_error != nullptr && !is_error->is_bool()) {
        return wrong_type(at + ".is_error", "a boolean", *is_error);
    }
    json::object m{{"role", "tool"}, {"tool_call_id", *id}};
    m["content"] = (is_error != nullptr && is_error->get_bool() ? "Error: " : "") + result;
    if (const auto it = tool_names_.find(std::string_view(id->get_string())); it != tool_names_.end()) {
        m["name"] = it->second;
    }
    out_.push_back(std::move(m));
    return std::nullopt;
}

/// A user turn: text blocks joined into user messages, each tool_result a "tool" message in place.
maybe_error translation::user(const json::value& content, const std::string& where) {
    if (content.is_string()) {
        out_.push_back(json::object{{"role", "user"}, {"content", content}});
        return std::nullopt;
    }
    if (!content.is_array()) {
        return wrong_type(where, "a string or an array of content blocks", content);
    }
    std::string text;
    bool any = false;
    for (std::size_t i = 0; i < content.get_array().size(); ++i) {
        const auto& b = content.get_array()[i];
        const std::string at = where + "." + std::to_string(i);
        if (!b.is_object()) {
            return wrong_type(at, "an object", b);
        }
        const auto type = block_type(b.get_object());
        if (type == "text") {
            auto t = text_of(b.get_object(), at);
            if (!t) {
                return t.error();
            }
            text += (text.empty() ? "" : "\n") + *t;
            any = true;
        } else if (type == "tool_result") {
            if (auto e = tool_result(b.get_object(), at, text)) {
                return e;
            }
            any = false;
        } else {
            return unsupported_block(type, at);
        }
    }
    if (any || content.get_array().empty()) {
        flush_user(text);
    }
    return std::nullopt;
}

/// An assistant turn: text, thinking (reasoning) and tool_use (calls); redacted thinking is dropped.
api_result<gathered> translation::assistant(const json::value& content, const std::string& where) {
    gathered g;
    if (content.is_string()) {
        g.text = std::string(content.get_string());
        return g;
    }
    if (!content.is_array()) {
        return wrong_type(where, "a string or an array of content blocks", content);
    }
    for (std::size_t i = 0; i < content.get_array().size(); ++i) {
        const auto& b = content.get_array()[i];
        const std::string at = where + "." + std::to_string(i);
        if (!b.is_object()) {
            return wrong_type(at, "an object", b);
        }
        const auto& block = b.get_object();
        const auto type = block_type(block);
        if (type == "text") {
            auto t = text_of(block, at);
            if (!t) {
                return t.error();
            }
            g.text += (g.text.empty() ? "" : "\n") + *t;
        } else if (type == "thinking") {
            const auto* t = find(block, "thinking");
            if (t == nullptr || !t->is_string()) {
                return t ? wrong_type(at + ".thinking", "a string", *t) : missing(at + ".thinking");
            }
            g.reasoning += t->get_string();
        } else if (type == "tool_use") {
            const auto* id = find(block, "id");
            const auto* name = find(block, "name");
            const auto* input = find(block, "input");
            if (id == nullptr || !id->is_string() || name == nullptr || !name->is_string()) {
                return bad_request(at + ": a tool_use block needs a string id and name", at, "invalid_type");
            }
            if (input == nullptr || !input->is_object()) {
                return input ? wrong_type(at + ".input", "an object", *input) : missing(at + ".input");
            }
            tool_names_[std::string(id->get_string())] = std::string(name->get_string());
            g.calls.push_back(json::object{
                {"id", *id}, {"type", "function"}, {"function", json::object{{"name", *name}, {"arguments", *input}}}});
        } else if (type != "redacted_thinking") {
            return unsupported_block(type, at);
        }
    }
    return g;
}

/// An assistant turn in OpenAI form: content, tool_calls, and the reasoning under the names Qwen-style
/// (reasoning_content) and gpt-oss (thinking) templates read.
json::object assistant_message(gathered g) {
    json::object a{{"role", "assistant"}, {"content", std::move(g.text)}};
    if (!g.calls.empty()) {
        a["tool_calls"] = std::move(g.calls);
    }
    if (!g.reasoning.empty()) {
        a["reasoning_content"] = g.reasoning;
        a["thinking"] = std::move(g.reasoning);
    }
    return a;
}

/// Message `where` of the history; `last` makes an assistant message the prefill.
maybe_error read_message(translation& tr, const json::value& v, const std::string& where, bool last,
                         messages_request& out) {
    if (!v.is_object()) {
        return wrong_type(where, "an object", v);
    }
    const auto& m = v.get_object();
    const auto* role = find(m, "role");
    const auto* content = find(m, "content");
    if (role == nullptr || !role->is_string()) {
        return role ? wrong_type(where + ".role", "a string", *role) : missing(where + ".role");
    }
    if (content == nullptr) {
        return missing(where + ".content");
    }
    if (role->get_string() == "user") {
        return tr.user(*content, where + ".content");
    }
    if (role->get_string() != "assistant") {
        return bad_request(where +
                               ".role: must be \"user\" or \"assistant\" (the system prompt is the top-level "
                               "system field), got '" +
                               std::string(role->get_string()) + "'",
                           where + ".role", "unsupported_value");
    }
    auto g = tr.assistant(*content, where + ".content");
    if (!g) {
        return g.error();
    }
    if (!last) {
        out.chat.generate.messages.push_back(assistant_message(std::move(*g)));
        return std::nullopt;
    }
    if (!g->calls.empty()) { // a prefill: the answer continues it
        return bad_request(where + ": the final assistant message is a prefill and cannot hold tool_use",
                           where + ".content", "invalid_value");
    }
    out.prefill = std::move(g->text);
    return std::nullopt;
}

/// messages: the OpenAI-form history in `out.chat.generate.messages` (after the system message), and a final
/// assistant message's text as the prefill.
maybe_error read_messages(const json::object& o, messages_request& out) {
    const auto* v = find(o, "messages");
    if (v == nullptr) {
        return missing("messages");
    }
    if (!v->is_array()) {
        return wrong_type("messages", "an array", *v);
    }
    const auto& list = v->get_array();
    if (list.empty()) {
        return bad_request("messages: at least one message is required", "messages", "invalid_value");
    }
    auto& messages = out.chat.generate.messages;
    translation tr(messages);
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (auto e = read_message(tr, list[i], "messages." + std::to_string(i), i + 1 == list.size(), out)) {
            return e;
        }
    }
    if (messages.empty() || (messages.size() == 1 && messages[0].as_object().at("role").as_string() == "system")) {
        return bad_request("messages: a user message must come before the assistant prefill", "messages",
                           "invalid_value");
    }
    return std::nullopt;
}

maybe_error read_system(const json::object& o, json::array& messages) {
    const auto* v = find(o, "system");
    if (v == nullptr) {
        return std::nullopt;
    }
    auto text = read_text(*v, "system");
    if (!text) {
        return text.error();
    }
    if (!text->empty()) {
        messages.push_back(json::object{{"role", "system"}, {"content", std::move(*text)}});
    }
    return std::nullopt;
}

/// A custom tool as the OpenAI function the chat templates and the tool-call parser read.
api_result<json::object> read_tool(const json::value& t, const std::string& at) {
    if (!t.is_object()) {
        return wrong_type(at, "an object", t);
    }
    const auto& tool = t.get_object();
    const auto type = block_type(tool);
    if (find(tool, "type") != nullptr && type != "custom") {
        return unsupported(at + ".type", "server tools ('" + std::string(type) +
                                             "') are not supported; define custom tools (name, input_schema)");
    }
    if (auto e = reject_unknown(tool, tool_keys, at + ".")) {
        return *e;
    }
    const auto* name = find(tool, "name");
    const auto* schema = find(tool, "input_schema");
    const auto* description = find(tool, "description");
    if (name == nullptr || !name->is_string()) {
        return name ? wrong_type(at + ".name", "a string", *name) : missing(at + ".name");
    }
    if (schema == nullptr || !schema->is_object()) {
        return schema ? wrong_type(at + ".input_schema", "an object", *schema) : missing(at + ".input_schema");
    }
    json::object fn{{"name", *name}};
    if (description != nullptr) {
        if (!description->is_string()) {
            return wrong_type(at + ".description", "a string", *description);
        }
        fn["description"] = *description;
    }
    fn["parameters"] = *schema;
    return json::object{{"type", "function"}, {"function", std::move(fn)}};
}

/// tool_choice: auto and none; any (`chat.forced_tool` empty) and tool (`chat.forced_tool` its name) force a call,
/// which the handler enforces with a grammar (apply_tool_choice) once the template's call format is known.
maybe_error read_tool_choice(const json::object& o, bool& none, completion_request& chat) {
    const auto* c = find(o, "tool_choice");
    if (c == nullptr) {
        return std::nullopt;
    }
    if (!c->is_object()) {
        return wrong_type("tool_choice", "an object", *c);
    }
    const auto type = block_type(c->get_object());
    if (type == "any") {
        chat.forced_tool = std::string();
    } else if (type == "tool") {
        const auto* name = find(c->get_object(), "name");
        if (name == nullptr) {
            return missing("tool_choice.name");
        }
        if (!name->is_string() || name->get_string().empty()) {
            return wrong_type("tool_choice.name", "a tool's name", *name);
        }
        chat.forced_tool = std::string(name->get_string());
    } else if (type != "auto" && type != "none") {
        return bad_request("tool_choice.type: must be one of \"auto\", \"any\", \"tool\", \"none\"", "tool_choice.type",
                           "invalid_value");
    }
    none = type == "none";
    if (const auto* d = find(c->get_object(), "disable_parallel_tool_use")) {
        if (!d->is_bool()) {
            return wrong_type("tool_choice.disable_parallel_tool_use", "a boolean", *d);
        }
        chat.parallel_tool_calls = !d->get_bool();
    }
    return std::nullopt;
}

/// A forced call needs tools, and a named one must be among them.
maybe_error check_forced_tool(const completion_request& chat) {
    if (!chat.forced_tool) {
        return std::nullopt;
    }
    if (chat.tools.empty()) {
        return bad_request("tool_choice: forcing a tool call needs tools", "tool_choice", "invalid_value");
    }
    if (chat.forced_tool->empty()) {
        return std::nullopt;
    }
    for (const auto& t : chat.tools) {
        if (t.at("function").at("name").get_string() == *chat.forced_tool) {
            return std::nullopt;
        }
    }
    return bad_request("tool_choice.name: '" + *chat.forced_tool + "' is not among the tools", "tool_choice.name",
                       "invalid_value");
}

maybe_error read_tools(const json::object& o, messages_endpoint endpoint, completion_request& chat) {
    bool none = false;
    if (auto e = read_tool_choice(o, none, chat)) {
        return e;
    }
    const auto* tools = find(o, "tools");
    if (tools == nullptr) {
        return endpoint == messages_endpoint::create ? check_forced_tool(chat) : std::nullopt;
    }
    if (!tools->is_array()) {
        return wrong_type("tools", "an array", *tools);
    }
    json::array functions;
    for (std::size_t i = 0; i < tools->get_array().size(); ++i) {
        auto f = read_tool(tools->get_array()[i], "tools." + std::to_string(i));
        if (!f) {
            return f.error();
        }
        functions.push_back(std::move(*f));
    }
    if (!none && !functions.empty()) {
        chat.generate.template_kwargs["tools"] = functions;
        chat.tools = std::move(functions);
        chat.parse_tool_calls = true;
    }
    return endpoint == messages_endpoint::create ? check_forced_tool(chat) : std::nullopt;
}

/// thinking -> the template's enable_thinking (false unless enabled, as the API answers without thinking by
/// default); budget_tokens is checked but not enforced.
maybe_error read_thinking(const json::object& o, generate_request& g) {
    bool enabled = false;
    if (const auto* t = find(o, "thinking")) {
        if (!t->is_object()) {
            return wrong_type("thinking", "an object", *t);
        }
        const auto type = block_type(t->get_object());
        if (type == "enabled") {
            auto budget = read_integer(t->get_object(), "budget_tokens", 1, max_int32, "thinking.budget_tokens");
            if (!budget) {
                return budget.error();
            }
            if (!*budget) {
                return missing("thinking.budget_tokens");
            }
        } else if (type != "disabled" && type != "adaptive") {
            return bad_request("thinking.type: must be \"enabled\", \"adaptive\" or \"disabled\"", "thinking.type",
                               "invalid_value");
        }
        enabled = type != "disabled";
    }
    g.template_kwargs["enable_thinking"] = enabled;
    return std::nullopt;
}

/// output_config.format ({"type": "json_schema", "schema": {...}}, Anthropic's structured outputs): the answer's
/// text follows the schema, enforced by the same grammar as the chat route's response_format json_schema. The
/// rest of output_config (effort) is accepted and ignored.
maybe_error read_output_format(const json::object& o, completion_request& chat) {
    const auto* oc = find(o, "output_config");
    if (oc == nullptr) {
        return std::nullopt;
    }
    if (!oc->is_object()) {
        return wrong_type("output_config", "an object", *oc);
    }
    const auto* format = find(oc->get_object(), "format");
    if (format == nullptr || format->is_null()) {
        return std::nullopt;
    }
    if (!format->is_object()) {
        return wrong_type("output_config.format", "an object", *format);
    }
    if (block_type(format->get_object()) != "json_schema") {
        return bad_request("output_config.format.type: must be \"json_schema\"", "output_config.format.type",
                           "invalid_value");
    }
    const auto* schema = find(format->get_object(), "schema");
    if (schema == nullptr) {
        return missing("output_config.format.schema");
    }
    const json::object as_openai{
        {"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", *schema}, {"strict", true}}}}}};
    if (auto e = read_structured_output(as_openai, chat)) {
        auto renamed = *e;
        const std::string from = "response_format.json_schema.schema";
        if (renamed.message.starts_with(from)) {
            renamed.message = "output_config.format.schema" + renamed.message.substr(from.size());
        }
        renamed.param = "output_config.format.schema";
        return renamed;
    }
    return std::nullopt;
}

maybe_error read_sampling(const json::object& o, generate_request& g, std::uint64_t random_seed) {
    auto& s = g.sampling;
    if (auto e = read_unit(o, "temperature", s.temperature)) {
        return e;
    }
    if (auto e = read_unit(o, "top_p", s.top_p)) {
        return e;
    }
    auto top_k = read_integer(o, "top_k", 0, max_int32, "top_k");
    if (!top_k) {
        return top_k.error();
    }
    if (*top_k) {
        s.top_k = static_cast<std::int32_t>(**top_k);
    }
    s.seed = random_seed;
    if (auto ok = runtime::validate(s); !ok) {
        const auto& m = ok.error().message;
        return bad_request(m, m.substr(0, m.find(' ')), "out_of_range");
    }
    return std::nullopt;
}

maybe_error read_stops(const json::object& o, messages_request& out) {
    const auto* v = find(o, "stop_sequences");
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->is_array()) {
        return wrong_type("stop_sequences", "an array of strings", *v);
    }
    for (std::size_t i = 0; i < v->get_array().size(); ++i) {
        const auto& s = v->get_array()[i];
        if (!s.is_string()) {
            return wrong_type("stop_sequences." + std::to_string(i), "a string", s);
        }
        out.stop_sequences.emplace_back(s.get_string());
    }
    if (auto ok = runtime::validate_stops(out.stop_sequences); !ok) {
        return bad_request("stop_sequences: " + ok.error().message, "stop_sequences", "invalid_value");
    }
    out.chat.generate.stop = out.stop_sequences;
    return std::nullopt;
}

/// model, max_tokens, stream and metadata (whose user_id is not used).
maybe_error read_envelope(const json::object& o, messages_endpoint endpoint, messages_request& out) {
    const auto* model = find(o, "model");
    if (model == nullptr || !model->is_string()) {
        return model ? wrong_type("model", "a string", *model) : missing("model");
    }
    out.chat.model = std::string(model->get_string());
    if (endpoint == messages_endpoint::count_tokens) {
        return std::nullopt;
    }
    auto max_tokens = read_integer(o, "max_tokens", 1, max_int32, "max_tokens");
    if (!max_tokens) {
        return max_tokens.error();
    }
    if (!*max_tokens) {
        return missing("max_tokens");
    }
    out.chat.generate.max_tokens = static_cast<std::uint32_t>(**max_tokens);
    if (const auto* s = find(o, "stream")) {
        if (!s->is_bool()) {
            return wrong_type("stream", "a boolean", *s);
        }
        out.chat.stream = s->get_bool();
    }
    if (const auto* m = find(o, "metadata"); m != nullptr && !m->is_object()) {
        return wrong_type("metadata", "an object", *m);
    }
    return std::nullopt;
}

} // namespace

api_result<messages_request> parse_messages_request(std::string_view body, messages_endpoint endpoint,
                                                    std::uint64_t random_seed) {
    auto parsed = parse_json_object(body);
    if (!parsed) {
        return parsed.error();
    }
    const auto& o = *parsed;
    messages_request out;
    out.chat.kind = completion_kind::chat;
    const bool create = endpoint == messages_endpoint::create;
    if (auto e = create ? reject_unknown(o, create_keys, "") : reject_unknown(o, count_keys, "")) {
        return *e;
    }
    if (auto e = read_envelope(o, endpoint, out)) {
        return *e;
    }
    if (auto e = read_system(o, out.chat.generate.messages)) {
        return *e;
    }
    if (auto e = read_messages(o, out)) {
        return *e;
    }
    if (auto e = read_tools(o, endpoint, out.chat)) {
        return *e;
    }
    if (auto e = read_thinking(o, out.chat.generate)) {
        return *e;
    }
    if (auto e = read_output_format(o, out.chat)) {
        return *e;
    }
    if (create) {
        if (auto e = read_sampling(o, out.chat.generate, random_seed)) {
            return *e;
        }
        if (auto e = read_stops(o, out)) {
            return *e;
        }
    }
    return out;
}

} // namespace sluice::server
