// OpenAI-shaped error bodies and responses.
#include "server/api_error.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>

#include <stdexcept>

namespace sluice::server {

namespace http = boost::beast::http;
namespace json = boost::json;

void throw_exception_from_error(const api_error& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

api_error shutdown_error() {
    return api_error{boost::beast::http::status::service_unavailable,
                     "the server is shutting down; the generation was stopped", "unavailable_error", std::nullopt,
                     "server_shutdown"};
}

api_error bad_request(std::string message, std::optional<std::string> param, std::optional<std::string> code) {
    return api_error{http::status::bad_request, std::move(message), "invalid_request_error", std::move(param),
                     std::move(code)};
}

json::object error_body(const api_error& e) {
    json::object inner;
    inner["message"] = e.message;
    inner["type"] = e.type;
    inner["param"] = e.param ? json::value(*e.param) : json::value(nullptr);
    inner["code"] = e.code ? json::value(*e.code) : json::value(nullptr);
    return json::object{{"error", std::move(inner)}};
}

http::response<http::string_body> error_response(const api_error& e, unsigned version, bool keep_alive) {
    http::response<http::string_body> res{e.status, version};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, "application/json");
    if (e.status == http::status::service_unavailable) {
        res.set(http::field::retry_after, "1");
    }
    res.keep_alive(keep_alive);
    res.body() = json::serialize(error_body(e));
    res.prepare_payload();
    return res;
}

} // namespace sluice::server
