// response_format and grammar: a JSON schema compiled to GBNF, or GBNF as given, checked before generation.
#include "server/structured_output.hpp"

#include "runtime/grammar/json_schema.hpp"

#include <string>

namespace sluice::server {
namespace {

namespace json = boost::json;

api_error schema_error(const error& e, const std::string& field) {
    const bool unsupported = e.message.find("unsupported") != std::string::npos;
    return bad_request(field + ": " + e.message, field, unsupported ? "unsupported_value" : "invalid_value");
}

/// response_format.json_schema: a name (as OpenAI requires), an optional schema (absent: any JSON value) and
/// an optional boolean strict (the grammar is enforced either way).
api_result<std::string> read_json_schema(const json::object& rf) {
    const auto* js = rf.if_contains("json_schema");
    if (js == nullptr || !js->is_object()) {
        return bad_request("response_format.json_schema must be an object with a name and a schema",
                           "response_format.json_schema", "invalid_type");
    }
    const auto& o = js->get_object();
    for (const auto& kv : o) {
        if (kv.key() != "name" && kv.key() != "schema" && kv.key() != "strict" && kv.key() != "description") {
            const std::string field = "response_format.json_schema." + std::string(kv.key());
            return bad_request("unknown field " + field, field, "unknown_field");
        }
    }
    const auto* name = o.if_contains("name");
    if (name == nullptr || !name->is_string() || name->get_string().empty()) {
        return bad_request("response_format.json_schema.name must be a non-empty string",
                           "response_format.json_schema.name", "invalid_value");
    }
    if (const auto* strict = o.if_contains("strict"); strict != nullptr && !strict->is_bool() && !strict->is_null()) {
        return bad_request("response_format.json_schema.strict must be a boolean", "response_format.json_schema.strict",
                           "invalid_type");
    }
    const auto* schema = o.if_contains("schema");
    const json::value any(true);
    auto text = grammar::json_schema_to_gbnf(schema != nullptr ? *schema : any);
    if (!text) {
        return schema_error(text.error(), "response_format.json_schema.schema");
    }
    if (auto g = grammar::parse_gbnf(*text); !g) {
        // Only a $ref cycle with nothing in between can fail here (left recursion).
        return schema_error(make_error(std::errc::invalid_argument,
                                       "a '$ref' cycle with no JSON text in between (" + g.error().message + ")"),
                            "response_format.json_schema.schema");
    }
    return std::move(*text);
}

api_result<std::string> read_response_format(const json::value& rf) {
    if (!rf.is_object()) {
        return bad_request("response_format must be an object", "response_format", "invalid_type");
    }
    const auto* type = rf.get_object().if_contains("type");
    if (type == nullptr || !type->is_string()) {
        return bad_request("response_format.type must be \"text\", \"json_object\" or \"json_schema\"",
                           "response_format.type", "invalid_value");
    }
    const auto t = type->get_string();
    if (t == "text") {
        return std::string();
    }
    if (t == "json_object") {
        return grammar::json_object_gbnf();
    }
    if (t == "json_schema") {
        return read_json_schema(rf.get_object());
    }
    return bad_request("response_format.type must be \"text\", \"json_object\" or \"json_schema\"",
                       "response_format.type", "invalid_value");
}

} // namespace

std::optional<api_error> read_structured_output(const json::object& o, completion_request& out) {
    std::string from_format;
    if (const auto* rf = o.if_contains("response_format"); rf != nullptr && !rf->is_null()) {
        auto g = read_response_format(*rf);
        if (!g) {
            return g.error();
        }
        from_format = std::move(*g);
    }
    const auto* text = o.if_contains("grammar");
    if (text == nullptr || text->is_null() || (text->is_string() && text->get_string().empty())) {
        out.generate.grammar = std::move(from_format);
        return std::nullopt;
    }
    if (!text->is_string()) {
        return bad_request("grammar must be a string (GBNF)", "grammar", "invalid_type");
    }
    if (!from_format.empty()) {
        return bad_request("grammar cannot be combined with a JSON response_format", "grammar", "invalid_value");
    }
    if (auto g = grammar::parse_gbnf(text->get_string()); !g) {
        return bad_request("grammar: " + g.error().message, "grammar", "invalid_value");
    }
    out.generate.grammar = std::string(text->get_string());
    return std::nullopt;
}

namespace {

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

/// One JSON schema for a call of any allowed tool: {"name": const, "arguments": parameters}, the tools'
/// definitions lifted to the top so their $refs resolve.
api_result<json::value> call_schema(const completion_request& request) {
    json::array alternatives;
    json::object top;
    for (std::size_t i = 0; i < request.tools.size(); ++i) {
        const auto& fn = request.tools[i].at("function").get_object();
        const auto& name = fn.at("name").get_string();
        if (!request.forced_tool->empty() && name != *request.forced_tool) {
            continue;
        }
        const std::string field = "tools[" + std::to_string(i) + "].function.parameters";
        const auto* given = fn.if_contains("parameters");
        json::value params = given != nullptr && !given->is_null() ? *given : json::value(json::object{{"type", "object"}});
        if (auto checked = grammar::json_schema_to_gbnf(params); !checked) {
            return schema_error(checked.error(), field);
        }
        if (params.is_object()) {
            if (auto e = lift_definitions(params.get_object(), top, field)) {
                return *e;
            }
        }
        alternatives.push_back(json::object{
            {"type", "object"},
            {"properties", json::object{{"name", json::object{{"const", name}}}, {"arguments", std::move(params)}}},
            {"required", json::array{"name", "arguments"}},
            {"additionalProperties", false}});
    }
    if (alternatives.size() == 1) {
        auto only = std::move(alternatives.front().get_object());
        for (auto& kv : top) {
            only[kv.key()] = std::move(kv.value());
        }
        return json::value(std::move(only));
    }
    top["anyOf"] = std::move(alternatives);
    return json::value(std::move(top));
}

} // namespace

std::optional<api_error> apply_tool_choice(completion_request& request, const output_reading& reading) {
    if (!request.forced_tool) {
        return std::nullopt;
    }
    if (!request.generate.grammar.empty()) {
        return bad_request("tool_choice forcing a call cannot be combined with a grammar or a JSON output format "
                           "(grammar, response_format, output_config.format)",
                           "tool_choice", "invalid_value");
    }
    if (reading.syntax.tools != chat::tool_format::hermes) {
        return bad_request("tool_choice forcing a call is supported for chat templates that write Hermes / Qwen3 "
                           "<tool_call> JSON; this model's template writes " +
                               std::string(chat::to_string(reading.syntax.tools)) + " calls; use \"auto\"",
                           "tool_choice", "unsupported_value");
    }
    auto schema = call_schema(request);
    if (!schema) {
        return schema.error();
    }
    auto text = grammar::json_schema_to_gbnf(*schema, "call");
    if (!text) {
        return schema_error(text.error(), "tools");
    }
    std::string g = std::move(*text);
    const std::string one = "\"<tool_call>\\n\" call \"\\n</tool_call>\"";
    // A prompt that opened <think> leaves the model inside its reasoning: it closes it before the call.
    g += "root ::= ";
    if (reading.syntax.starts_in_reasoning) {
        g += "( [^<] | \"<\" [^/] )* \"</think>\" [ \\n]{0,4} ";
    }
    g += one + (request.parallel_tool_calls ? " ( \"\\n\" " + one + " )*" : "") + "\n";
    if (auto parsed = grammar::parse_gbnf(g); !parsed) {
        return schema_error(make_error(std::errc::invalid_argument,
                                       "a '$ref' cycle with no JSON text in between (" + parsed.error().message + ")"),
                            "tools");
    }
    request.generate.grammar = std::move(g);
    return std::nullopt;
}

} // namespace sluice::server
