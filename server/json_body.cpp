// Request bodies as JSON: the bounded parse every POST endpoint starts with.
#include "server/json_body.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>

#include <string>
#include <utility>

namespace sluice::server {

api_result<boost::json::object> parse_json_object(std::string_view body) {
    boost::json::parse_options opts;
    opts.max_depth = 64;
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec, boost::json::storage_ptr(), opts);
    if (ec) {
        return bad_request("invalid JSON body: " + ec.message(), std::nullopt, "invalid_json");
    }
    if (!v.is_object()) {
        return bad_request("the request body must be a JSON object, got " + std::string(json_kind_name(v)),
                           std::nullopt, "invalid_json");
    }
    return std::move(v.as_object());
}

} // namespace sluice::server
