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

std::optional<api_error> apply_tool_choice(completion_request& request, const output_reading& reading) {
    if (!request.forced_tool) {
        return std::nullopt;
    }
    if (!request.generate.grammar.empty()) {
        return bad_request("tool_choice forcing a call cannot be combined with a grammar or a JSON output format "
                           "(grammar, response_format, output_config.format)",
                           "tool_choice", "invalid_value");
    }
    auto g = forced_call_grammar(request.tools, request.forced_tool, request.parallel_tool_calls, reading.forced);
    if (!g) {
        return g.error();
    }
    if (auto parsed = grammar::parse_gbnf(*g); !parsed) {
        return schema_error(make_error(std::errc::invalid_argument,
                                       "a '$ref' cycle with no JSON text in between (" + parsed.error().message + ")"),
                            "tools");
    }
    request.generate.grammar = std::move(*g);
    return std::nullopt;
}

} // namespace sluice::server
