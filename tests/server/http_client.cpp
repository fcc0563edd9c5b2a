// Blocking Beast client for the server tests.
#include "http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <sys/socket.h>
#include <sys/time.h>

namespace sluice::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

http_reply send_raw(unsigned short port, const std::string& bytes) {
    http_reply out;
    asio::io_context ioc;
    tcp::socket socket(ioc);
    boost::system::error_code ec;
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec) {
        out.error = "connect: " + ec.message();
        return out;
    }
    timeval tv{10, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    asio::write(socket, asio::buffer(bytes), ec); // a server that answers early may close before reading all
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(socket, buffer, parser, ec);
    if (ec) {
        out.error = "read: " + ec.message();
        return out;
    }
    const auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) {
        std::string name(f.name_string());
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        out.headers[name] = std::string(f.value());
    }
    out.body = res.body();
    return out;
}

http_reply send_request(unsigned short port, const std::string& method, const std::string& target,
                        const std::string& body, const header_list& headers) {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    for (const auto& [k, v] : headers) {
        req += k + ": " + v + "\r\n";
    }
    if (!body.empty() || method == "POST") {
        req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    req += "\r\n" + body;
    return send_raw(port, req);
}

json::value body_json(const http_reply& r) {
    boost::system::error_code ec;
    auto v = json::parse(r.body, ec);
    return ec ? json::value() : v;
}

std::string openai_error_problem(const http_reply& r) {
    if (r.status == 0) {
        return "no response: " + r.error;
    }
    if (r.headers.count("content-type") == 0 || r.headers.at("content-type") != "application/json") {
        return "Content-Type is not application/json";
    }
    const auto v = body_json(r);
    const auto* outer = v.if_object();
    const auto* e = outer && outer->size() == 1 ? outer->if_contains("error") : nullptr;
    if (e == nullptr || !e->is_object()) {
        return "the body is not {\"error\": {...}}: " + r.body;
    }
    const auto& o = e->get_object();
    const auto* message = o.if_contains("message");
    const auto* type = o.if_contains("type");
    const auto* param = o.if_contains("param");
    const auto* code = o.if_contains("code");
    if (!message || !message->is_string() || message->get_string().empty() || !type || !type->is_string() || !param ||
        !(param->is_string() || param->is_null()) || !code || !(code->is_string() || code->is_null())) {
        return "the error object lacks message/type/param/code: " + r.body;
    }
    return {};
}

} // namespace sluice::test
