// Structured output: response_format (text, json_object, json_schema) and llama-server's `grammar` field, read
// into the engine request's GBNF grammar.
#pragma once

#include "server/openai_request.hpp"

#include <boost/json/object.hpp>

#include <optional>

namespace sluice::server {

/// Reads `response_format` ({"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema",
/// "strict"}}) and `grammar` (GBNF text) from request `o` into out.generate.grammar. Errors (400) name the
/// field: "response_format.json_schema.schema: unsupported keyword 'pattern' at #/properties/x",
/// "grammar: line 2, column 5: ...", and both a grammar and a JSON response_format at once.
std::optional<api_error> read_structured_output(const boost::json::object& o, completion_request& out);

} // namespace sluice::server
