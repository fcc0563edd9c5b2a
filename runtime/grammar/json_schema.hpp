// JSON schema to GBNF: the grammar behind response_format json_schema / json_object.
#pragma once

#include "runtime/grammar/grammar.hpp"

#include <boost/json/value.hpp>

#include <memory>
#include <string>

namespace sluice::grammar {

/// GBNF for a JSON document valid under `schema`. Supported: type (object, array, string, number, integer,
/// boolean, null, and arrays of them), properties / required / additionalProperties (false, true or a schema),
/// items / prefixItems / minItems / maxItems, enum, const, anyOf, oneOf (as anyOf), allOf of object schemas,
/// $ref to #, #/$defs/... and #/definitions/..., minLength / maxLength; format and annotations (title,
/// description, default, examples, ...) are accepted and not enforced. Properties come in the order the schema
/// lists them, optional ones may be left out, and no undeclared ones are generated unless additionalProperties
/// is a schema (every document the grammar allows is valid under the schema, not the other way round).
/// Whitespace goes where a pretty-printer puts it (after `{`, `[`, `:` and `,`, and before `}` and `]`), each
/// time at most one space or a newline and up to 20 spaces, so a model cannot pad its answer forever; numbers have at most 16 digits before and after the point.
/// Errors (std::errc::invalid_argument) name the keyword and its JSON pointer: "unsupported keyword 'pattern'
/// at #/properties/x". `root_name` names the rule of the whole document (another rule than "root" lets a caller
/// embed the document in a grammar of its own).
[[nodiscard]] result<std::string> json_schema_to_gbnf(const boost::json::value& schema,
                                                      std::string_view root_name = "root");

/// GBNF for any JSON object (response_format json_object), with the same bounded whitespace.
[[nodiscard]] std::string json_object_gbnf();

/// json_schema_to_gbnf, parsed. A $ref cycle with no JSON text in between (left recursion) is refused here.
[[nodiscard]] result<std::shared_ptr<const grammar>> compile_json_schema(const boost::json::value& schema);

} // namespace sluice::grammar
