// OpenAI-shaped errors: {"error": {"message", "type", "param", "code"}} with the HTTP status they travel with.
#pragma once

#include <boost/assert/source_location.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <string>

namespace sluice::server {

/// An error answered to a client. `type` follows OpenAI ("invalid_request_error", "authentication_error",
/// "not_found_error", "server_error", "unavailable_error"); `param` names the request field at fault.
struct api_error {
    boost::beast::http::status status = boost::beast::http::status::bad_request;
    std::string message;
    std::string type = "invalid_request_error";
    std::optional<std::string> param;
    std::optional<std::string> code;
};

/// Lets boost::system::result<T, api_error>::value() throw (never expected: callers test the result first).
[[noreturn]] void throw_exception_from_error(const api_error& e, const boost::source_location& loc);

/// A value or the error a client gets instead.
template <class T>
using api_result = boost::system::result<T, api_error>;

/// 400 invalid_request_error naming `param`.
api_error bad_request(std::string message, std::optional<std::string> param = std::nullopt,
                      std::optional<std::string> code = std::nullopt);

/// 503 unavailable_error, code server_shutdown: the server stopped (SIGTERM) before the request could finish.
api_error shutdown_error();

/// {"error": {...}} built with Boost.JSON.
boost::json::object error_body(const api_error& e);

/// A complete response carrying `e`: JSON body, Content-Type, and Retry-After for 503.
boost::beast::http::response<boost::beast::http::string_body> error_response(const api_error& e, unsigned version,
                                                                             bool keep_alive);

} // namespace sluice::server
