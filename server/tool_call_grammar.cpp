// Forced tool-call grammars per format: JSON calls with the name inside (Hermes, Llama 3.x, Mistral's array), a
// name outside JSON arguments (Mistral [ARGS], DeepSeek V3, Kimi-K2, gpt-oss harmony) and XML-style parameters
// (Qwen3-Coder, GLM-4.5), each tool's schema compiled to GBNF under rule names of its own.
#include "server/tool_call_grammar.hpp"

#include "runtime/grammar/json_schema.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>
#include <string>

namespace sluice::server {
namespace {

namespace json = boost::json;
using chat::tool_format;

/// `text` as a GBNF string literal.
std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            out += c;
        }
    }
    return out + "\"";
}

/// GBNF `text` with every rule name prefixed by `prefix` (string literals, classes, token references,
/// repetition bounds and comments left as they are).
std::string prefixed_rules(std::string_view text, const std::string& prefix) {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        const auto copy_until = [&](char close) {
            std::size_t j = i + 1;
            while (j < text.size() && text[j] != close) {
                j += text[j] == '\\' ? 2 : 1;
            }
            j = std::min(j + 1, text.size());
            out.append(text.substr(i, j - i));
            i = j;
        };
        if (c == '"') {
            copy_until('"');
        } else if (c == '[') {
            copy_until(']');
        } else if (c == '{') {
            copy_until('}');
        } else if (c == '<') {
            copy_until('>');
        } else if (c == '#') {
            copy_until('\n');
        } else if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
            std::size_t j = i;
            while (j < text.size() &&
                   (std::isalnum(static_cast<unsigned char>(text[j])) != 0 || text[j] == '-' || text[j] == '_')) {
                ++j;
            }
            out += prefix;
            out.append(text.substr(i, j - i));
            i = j;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

api_error schema_error(const error& e, const std::string& field) {
    const bool unsupported = e.message.find("unsupported") != std::string::npos;
    return bad_request(field + ": " + e.message, field, unsupported ? "unsupported_value" : "invalid_value");
}

/// One offered tool: its index in `tools`, name and parameters schema.
struct offered {
    std::size_t index;
    std::string name;
    json::value params;
    [[nodiscard]] std::string field() const { return "tools[" + std::to_string(index) + "].function.parameters"; }
};

std::vector<offered> offered_tools(const json::array& tools, const std::optional<std::string>& only) {
    std::vector<offered> out;
    for (std::size_t i = 0; i < tools.size(); ++i) {
        const auto& fn = tools[i].at("function").get_object();
        const std::string name(fn.at("name").get_string());
        if (only && !only->empty() && name != *only) {
            continue;
        }
        const auto* given = fn.if_contains("parameters");
        out.push_back(
            {i, name, given != nullptr && !given->is_null() ? *given : json::value(json::object{{"type", "object"}})});
    }
    return out;
}

/// Moves `params`' $defs / definitions into `into` (one namespace for every tool); a name two tools define
/// differently is an error naming the field.
std::optional<api_error> lift_definitions(json::object& params, json::object& into, const std::string& field) {
    for (const char* key : {"$defs", "definitions"}) {
        auto* defs = params.if_contains(key);
        if (defs == nullptr) {
            continue;
        }
        if (!defs->is_object()) {
            return bad_request(field + "." + key + " must be an object", field + "." + key, "invalid_value");
        }
        auto& target = into[key];
        if (!target.is_object()) {
            target = json::object{};
        }
        for (const auto& kv : defs->get_object()) {
            auto* existing = target.get_object().if_contains(kv.key());
            if (existing != nullptr && *existing != kv.value()) {
                return bad_request(field + "." + key + "." + std::string(kv.key()) +
                                       " differs from another tool's definition of that name",
                                   field, "invalid_value");
            }
            target.get_object()[kv.key()] = kv.value();
        }
        params.erase(key);
    }
    return std::nullopt;
}

/// GBNF rules for a JSON object {"name": const, `args_key`: parameters} of any offered tool, rooted at `call`.
api_result<std::string> json_call_rules(const std::vector<offered>& tools, std::string_view args_key) {
    json::array alternatives;
    json::object top;
    for (const auto& t : tools) {
        json::value params = t.params;
        if (auto checked = grammar::json_schema_to_gbnf(params); !checked) {
            return schema_error(checked.error(), t.field());
        }
        if (params.is_object()) {
            if (auto e = lift_definitions(params.get_object(), top, t.field())) {
                return *e;
            }
        }
        alternatives.push_back(json::object{
            {"type", "object"},
            {"properties", json::object{{"name", json::object{{"const", t.name}}}, {args_key, std::move(params)}}},
            {"required", json::array{"name", args_key}},
            {"additionalProperties", false}});
    }
    json::value schema;
    if (alternatives.size() == 1) {
        auto only = std::move(alternatives.front().get_object());
        for (auto& kv : top) {
            only[kv.key()] = std::move(kv.value());
        }
        schema = std::move(only);
    } else {
        top["anyOf"] = std::move(alternatives);
        schema = std::move(top);
    }
    auto text = grammar::json_schema_to_gbnf(schema, "call");
    if (!text) {
        return schema_error(text.error(), "tools");
    }
    return prefixed_rules(*text, "j-");
}

/// The rule `prefix`-args: tool `t`'s arguments as JSON under its schema.
api_result<std::string> json_args_rules(const offered& t, const std::string& prefix) {
    auto text = grammar::json_schema_to_gbnf(t.params, "args");
    if (!text) {
        return schema_error(text.error(), t.field());
    }
    return prefixed_rules(*text, prefix);
}

/// Whether `text`, written raw as a parameter value, would be read back as a JSON value rather than a string.
bool reads_as_json(std::string_view text) {
    boost::system::error_code ec;
    (void)json::parse(text, ec);
    return !ec;
}

/// A parameter value of property schema `p` as the XML-style parsers read it back (tool_call_blocks'
/// parameter_value): rule `rule` ::= ... plus the rules it needs.
api_result<std::string> xml_value_rules(const json::value& p, const json::object& defs, const std::string& rule,
                                        const std::string& field) {
    const json::object* o = p.is_object() ? &p.get_object() : nullptr;
    const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
    const bool is_string = type != nullptr && type->is_string() && type->get_string() == "string";
    const bool untyped = type == nullptr;
    if (const auto* e = o != nullptr ? o->if_contains("enum") : nullptr;
        e != nullptr && e->is_array() && !e->get_array().empty() && (is_string || untyped) &&
        std::all_of(e->get_array().begin(), e->get_array().end(), [](const json::value& v) { return v.is_string(); })) {
        // Raw text; an untyped value that would read as JSON ("12") is written as a JSON string instead.
        std::string alts;
        for (const auto& v : e->get_array()) {
            const std::string_view s = v.get_string();
            alts += alts.empty() ? "" : " | ";
            alts += quoted(!is_string && reads_as_json(s) ? json::serialize(v) : std::string(s));
        }
        return rule + " ::= " + alts + "\n";
    }
    if (is_string && !o->contains("const")) {
        // Text without "</"; maxLength bounds it (in characters, "<" and the one after counting as one).
        const auto* max = o->if_contains("maxLength");
        if (max != nullptr && max->is_int64() && max->get_int64() >= 0 && max->get_int64() <= 4096) {
            return rule + " ::= xml-char{0," + std::to_string(max->get_int64()) + "}\n";
        }
        return rule + " ::= xml-char*\n";
    }
    json::object schema = o != nullptr ? *o : json::object{};
    for (const auto& kv : defs) {
        schema[kv.key()] = kv.value();
    }
    auto text = grammar::json_schema_to_gbnf(schema, "v");
    if (!text) {
        return schema_error(text.error(), field);
    }
    return prefixed_rules(*text, rule + "-") + rule + " ::= " + rule + "-v\n";
}

constexpr const char* combinators[] = {"anyOf", "oneOf", "allOf", "$ref", "not"};

/// Qwen3-Coder (<parameter=k>\nv\n</parameter>\n) or GLM-4.5 (<arg_key>k</arg_key><arg_value>v</arg_value>)
/// parameters of tool `t`: the rule `prefix`-args and what it needs.
api_result<std::string> xml_args_rules(const offered& t, const std::string& prefix, bool glm) {
    // The parameters are written one by one: the schema must list them (no anyOf, $ref, ... at the top).
    const auto* type = t.params.is_object() ? t.params.get_object().if_contains("type") : nullptr;
    const bool plain = t.params.is_object() && (type == nullptr || *type == "object") &&
                       std::none_of(std::begin(combinators), std::end(combinators),
                                    [&](const char* k) { return t.params.get_object().contains(k); });
    if (!plain) {
        return bad_request(t.field() + ": forcing a " + std::string(glm ? "GLM-4.5" : "Qwen3-Coder") +
                               " call needs an object schema with properties (no anyOf, oneOf, allOf, $ref or not "
                               "at its top)",
                           t.field(), "unsupported_value");
    }
    const auto& params = t.params.get_object();
    json::object defs;
    for (const char* key : {"$defs", "definitions"}) {
        if (const auto* d = params.if_contains(key)) {
            defs[key] = *d;
        }
    }
    std::vector<std::string> required;
    if (const auto* r = params.if_contains("required"); r != nullptr && r->is_array()) {
        for (const auto& v : r->get_array()) {
            if (v.is_string()) {
                required.emplace_back(v.get_string());
            }
        }
    }
    std::string rules;
    std::string seq;
    if (const auto* props = params.if_contains("properties"); props != nullptr) {
        if (!props->is_object()) {
            return bad_request(t.field() + ".properties must be an object", t.field() + ".properties", "invalid_value");
        }
        std::size_t j = 0;
        for (const auto& kv : props->get_object()) {
            const std::string value_rule = prefix + "p" + std::to_string(j++);
            const std::string field = t.field() + ".properties." + std::string(kv.key());
            auto value = xml_value_rules(kv.value(), defs, value_rule, field);
            if (!value) {
                return value.error();
            }
            rules += *value;
            const std::string key(kv.key());
            const std::string one =
                glm ? quoted("<arg_key>" + key + "</arg_key><arg_value>") + " " + value_rule + " " +
                          quoted("</arg_value>")
                    : quoted("<parameter=" + key + ">\n") + " " + value_rule + " " + quoted("\n</parameter>\n");
            const bool needed = std::find(required.begin(), required.end(), key) != required.end();
            seq += needed ? " " + one : " ( " + one + " )?";
        }
    }
    return rules + prefix + "args ::=" + (seq.empty() ? " \"\"" : seq) + "\n";
}

/// The text of marker `text`: its control token where it is one, else the literal ("" for a marker that ends
/// generation: the grammar ends there and the end-of-generation token follows).
std::string marker(const forced_call_syntax& s, std::string_view text) {
    for (const auto& m : s.tokens) {
        if (m.text == text) {
            return m.end_of_generation ? "\"\"" : "<[" + std::to_string(m.id) + "]>";
        }
    }
    return quoted(text);
}

/// One call's rule `one` for the formats that write the name outside the arguments: an alternative per tool.
std::string per_tool_call(const forced_call_syntax& s, const offered& t, const std::string& args) {
    const std::string name = quoted(t.name);
    switch (s.format) {
    case tool_format::mistral:
        return marker(s, "[TOOL_CALLS]") + " " + name + " " + marker(s, "[ARGS]") + " " + args;
    case tool_format::deepseek_v3:
        return marker(s, "<｜tool▁call▁begin｜>") + " " +
               (s.fenced_json ? "\"function\" " + marker(s, "<｜tool▁sep｜>") + " " + name + " \"\\n```json\\n\" " +
                                    args + " \"\\n```\""
                              : name + " " + marker(s, "<｜tool▁sep｜>") + " " + args) +
               " " + marker(s, "<｜tool▁call▁end｜>");
    case tool_format::kimi_k2:
        return marker(s, "<|tool_call_begin|>") + " \"functions.\" " + name + " \":\" [0-9]{1,2} " +
               marker(s, "<|tool_call_argument_begin|>") + " " + args + " " + marker(s, "<|tool_call_end|>");
    case tool_format::harmony:
        // As the template writes a call: after "<|start|>assistant" (the prompt's end) the recipient, then the
        // commentary channel with the json content type. No analysis message first: its <|end|> is an
        // end-of-generation token, so the call could never follow it in the same generation.
        return "\" to=functions.\" " + name + " " + marker(s, "<|channel|>") + " \"commentary json\" " +
               marker(s, "<|message|>") + " " + args + " " + marker(s, "<|call|>");
    case tool_format::qwen3_coder:
        return quoted("<tool_call>\n<function=" + t.name + ">\n") + " " + args + " " +
               quoted("</function>\n</tool_call>");
    case tool_format::glm45:
        return marker(s, "<tool_call>") + " " + name + " " + args + " " + marker(s, "</tool_call>");
    default:
        return "\"\"";
    }
}

/// A format's rules and the rule text of one call and of one or more calls.
struct call_rules {
    std::string rules;
    std::string one;
    std::string many;
};

/// Hermes, Llama 3.x and Mistral Nemo: {"name": .., "arguments" | "parameters": {..}} objects.
api_result<call_rules> name_inside_json(const std::vector<offered>& tools, const forced_call_syntax& s) {
    auto rules = json_call_rules(tools, s.format == tool_format::llama3 ? "parameters" : "arguments");
    if (!rules) {
        return rules.error();
    }
    call_rules out{std::move(*rules), {}, {}};
    if (s.format == tool_format::hermes) {
        out.one = marker(s, "<tool_call>") + " \"\\n\" j-call \"\\n\" " + marker(s, "</tool_call>");
        out.many = out.one + " ( \"\\n\" " + out.one + " )*";
    } else if (s.format == tool_format::llama3) {
        out.one = "j-call";
        out.many = out.one;
    } else {
        out.one = marker(s, "[TOOL_CALLS]") + " \"[\" j-call \"]\"";
        out.many = marker(s, "[TOOL_CALLS]") + " \"[\" j-call ( \", \" j-call )* \"]\"";
    }
    return out;
}

/// The other formats: one alternative per tool, its name and then its arguments (JSON or XML-style parameters).
api_result<call_rules> name_outside(const std::vector<offered>& tools, const forced_call_syntax& s) {
    call_rules out;
    std::string alts;
    const bool xml = s.format == tool_format::qwen3_coder || s.format == tool_format::glm45;
    for (std::size_t k = 0; k < tools.size(); ++k) {
        std::string prefix = "t";
        prefix += std::to_string(k);
        prefix += '-';
        auto rules =
            xml ? xml_args_rules(tools[k], prefix, s.format == tool_format::glm45) : json_args_rules(tools[k], prefix);
        if (!rules) {
            return rules.error();
        }
        out.rules += *rules;
        alts += alts.empty() ? "" : " | ";
        alts += per_tool_call(s, tools[k], prefix + "args");
    }
    if (xml) {
        out.rules += "xml-char ::= [^<] | \"<\" [^/]\n";
    }
    out.rules += "one-call ::= " + alts + "\n";
    out.one = "one-call";
    switch (s.format) {
    case tool_format::deepseek_v3:
        out.one = marker(s, "<｜tool▁calls▁begin｜>") + " one-call " + marker(s, "<｜tool▁calls▁end｜>");
        out.many = marker(s, "<｜tool▁calls▁begin｜>") + " one-call ( \"\\n\" one-call )* " +
                   marker(s, "<｜tool▁calls▁end｜>");
        break;
    case tool_format::kimi_k2:
        out.one = marker(s, "<|tool_calls_section_begin|>") + " one-call " + marker(s, "<|tool_calls_section_end|>");
        out.many = marker(s, "<|tool_calls_section_begin|>") + " one-call+ " + marker(s, "<|tool_calls_section_end|>");
        break;
    case tool_format::harmony:
        out.many = out.one; // <|call|> ends the turn
        break;
    case tool_format::mistral:
        out.many = "one-call+"; // [TOOL_CALLS]name[ARGS]{..} back to back, as the template writes them
        break;
    default:
        out.many = "one-call ( \"\\n\" one-call )*";
        break;
    }
    return out;
}

} // namespace

api_result<std::string> forced_call_grammar(const json::array& tools, const std::optional<std::string>& only,
                                            bool parallel, const forced_call_syntax& s) {
    if (s.format == tool_format::none) {
        return bad_request("tool_choice forcing a call needs a chat template that writes tool calls", "tool_choice",
                           "unsupported_value");
    }
    const auto offered = offered_tools(tools, only);
    if (offered.empty()) {
        return bad_request("tool_choice: no tool to call", "tool_choice", "invalid_value");
    }
    const bool inside = s.format == tool_format::hermes || s.format == tool_format::llama3 ||
                        (s.format == tool_format::mistral && !s.args_marker);
    auto calls = inside ? name_inside_json(offered, s) : name_outside(offered, s);
    if (!calls) {
        return calls.error();
    }
    std::string g = std::move(calls->rules);
    g += "root ::= ";
    if (s.starts_in_reasoning && s.format != tool_format::harmony) {
        // A prompt that opened <think> leaves the model inside its reasoning: it closes it before the call.
        g += "( [^<] | \"<\" [^/] )* " + marker(s, "</think>") + " [ \\n]{0,4} ";
    }
    g += (parallel ? calls->many : calls->one) + "\n";
    return g;
}

} // namespace sluice::server
