// Structured output: response_format (text, json_object, json_schema) and llama-server's `grammar` field, read
// into the engine request's GBNF grammar.
#pragma once

#include "server/choice_output.hpp"
#include "server/openai_request.hpp"

#include <boost/json/object.hpp>

#include <optional>

namespace sluice::server {

/// Reads `response_format` ({"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema",
/// "strict"}}) and `grammar` (GBNF text) from request `o` into out.generate.grammar. Errors (400) name the
/// field: "response_format.json_schema.schema: unsupported keyword 'pattern' at #/properties/x",
/// "grammar: line 2, column 5: ...", and both a grammar and a JSON response_format at once.
std::optional<api_error> read_structured_output(const boost::json::object& o, completion_request& out);

/// tool_choice "required" or naming a function (request.forced_tool): sets request.generate.grammar to force
/// calls in the syntax the model's template writes (forced_call_grammar: every format of chat::tool_format; more
/// calls may follow unless parallel_tool_calls is false; a prompt that opened <think> first gets its reasoning
/// closed). Errors (400, param tool_choice): a grammar or JSON response_format in the same request, a template
/// without call syntax, or parameters the schema compiler refuses (param tools[i].function.parameters).
std::optional<api_error> apply_tool_choice(completion_request& request, const output_reading& reading);

} // namespace sluice::server
