// Request bodies as JSON: the parse every POST endpoint starts with, and the name of a value's kind as request
// errors say it ("a string", "an array", ...). Shared by the OpenAI and Anthropic request parsers so both bound and
// word their errors alike.
#pragma once

#include "server/api_error.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string_view>

namespace sluice::server {

/// "null", "a boolean", "a number", "a string", "an array" or "an object".
inline std::string_view json_kind_name(const boost::json::value& v) noexcept {
    switch (v.kind()) {
    case boost::json::kind::null:
        return "null";
    case boost::json::kind::bool_:
        return "a boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
        return "a number";
    case boost::json::kind::string:
        return "a string";
    case boost::json::kind::array:
        return "an array";
    case boost::json::kind::object:
        return "an object";
    }
    return "a value";
}

/// Parses `body` as a JSON object, nesting bounded at 64 levels (shared by every POST endpoint). Errors (400,
/// code invalid_json) name the parser's complaint, or the kind of value that is not an object.
api_result<boost::json::object> parse_json_object(std::string_view body);

} // namespace sluice::server
