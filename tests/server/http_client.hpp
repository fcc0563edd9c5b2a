// A blocking HTTP/1.1 client for the server tests (Boost.Beast over a real socket, 10 s receive timeout).
#pragma once

#include <boost/json/value.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sluice::test {

struct http_reply {
    int status = 0;                             ///< 0 when no response came back
    std::map<std::string, std::string> headers; ///< lower-case names
    std::string body;
    std::string error; ///< why there is no response
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// Sends `bytes` as they are on a new connection and reads one response.
http_reply send_raw(unsigned short port, const std::string& bytes);

/// Sends one request with Content-Length (when `body` is not empty or the method is POST) and reads the reply.
http_reply send_request(unsigned short port, const std::string& method, const std::string& target,
                        const std::string& body = {}, const header_list& headers = {});

/// POSTs JSON text.
inline http_reply post_json(unsigned short port, const std::string& target, const std::string& body,
                            const header_list& headers = {}) {
    header_list h = headers;
    h.emplace_back("Content-Type", "application/json");
    return send_request(port, "POST", target, body, h);
}

/// The body parsed as JSON (null when it is not JSON).
boost::json::value body_json(const http_reply& r);

/// Empty when `r` carries an OpenAI-shaped error ({"error": {message: non-empty string, type: string,
/// param: string|null, code: string|null}}), else what is wrong with it.
std::string openai_error_problem(const http_reply& r);

} // namespace sluice::test
