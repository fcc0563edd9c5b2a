// The small synchronous endpoints: GET /health, GET /v1/models, POST /tokenize, POST /detokenize.
#pragma once

#include "server/server_state.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::server {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// 503 {"status": "loading"} until the model is loaded, then 200 with the model and slot state.
http_response handle_health(const http_request& req, const server_state& st);

/// The one served model, OpenAI's list shape. The model must be loaded.
http_response handle_models(const http_request& req, const server_state& st);

/// {"content": string, "add_special": bool?} -> {"tokens": [ids]}. The model must be loaded.
http_response handle_tokenize(const http_request& req, const server_state& st);

/// {"tokens": [ids]} -> {"content": string} (invalid UTF-8 replaced by U+FFFD). The model must be loaded.
http_response handle_detokenize(const http_request& req, const server_state& st);

/// A 200 JSON response.
http_response json_ok(const boost::json::object& body, const http_request& req);

} // namespace sluice::server
