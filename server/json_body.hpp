// The name of a JSON value's kind as request errors say it ("a string", "an array", ...): shared by the OpenAI
// and Anthropic request parsers so both word a wrong type alike.
#pragma once

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

} // namespace sluice::server
