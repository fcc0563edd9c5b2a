// SSE framing and the chunked writer.
#include "server/sse.hpp"

#include "server/metrics.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

std::string sse_event(const boost::json::object& data) {
    std::string out = "data: ";
    out += boost::json::serialize(data);
    out += "\n\n";
    return out;
}

asio::awaitable<bool> sse_writer::start() {
    http::response<http::empty_body> res{http::status::ok, version_};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, "text/event-stream");
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(keep_alive_);
    if (version_ >= 11) {
        res.chunked(true);
    }
    http::response_serializer<http::empty_body> sr{res};
    note_response_status(&stream_, static_cast<unsigned>(res.result_int()));
    stream_.expires_after(timeout_);
    auto [ec, n] = co_await http::async_write_header(stream_, sr, asio::as_tuple(asio::use_awaitable));
    ok_ = !ec;
    co_return ok_;
}

asio::awaitable<bool> sse_writer::send(std::string_view event) {
    if (!ok_) {
        co_return false;
    }
    stream_.expires_after(timeout_);
    boost::system::error_code ec;
    if (version_ >= 11) {
        std::tie(ec, std::ignore) = co_await asio::async_write(
            stream_, http::make_chunk(asio::buffer(event.data(), event.size())), asio::as_tuple(asio::use_awaitable));
    } else {
        std::tie(ec, std::ignore) = co_await asio::async_write(stream_, asio::buffer(event.data(), event.size()),
                                                               asio::as_tuple(asio::use_awaitable));
    }
    ok_ = !ec;
    co_return ok_;
}

asio::awaitable<bool> sse_writer::finish() {
    if (!ok_ || version_ < 11) {
        co_return ok_;
    }
    stream_.expires_after(timeout_);
    auto [ec, n] = co_await asio::async_write(stream_, http::make_chunk_last(), asio::as_tuple(asio::use_awaitable));
    ok_ = !ec;
    co_return ok_;
}

} // namespace sluice::server
