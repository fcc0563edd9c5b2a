// The streamed responses' step: the next token and the previous token's write as one parallel group.
#include "server/stream_step.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>

#include <string_view>
#include <tuple>
#include <utility>

namespace sluice::server {
namespace {

namespace asio = boost::asio;

/// out.send as one side of a parallel group. Its coroutine is a new one, which by default throws when it starts
/// an operation after a cancellation (the client left): it must answer false instead, as the send itself does.
asio::awaitable<bool> send_in_parallel(sse_writer& out, std::string_view events) {
    co_await asio::this_coro::throw_if_cancelled(false);
    co_return co_await out.send(events);
}

} // namespace

asio::awaitable<result<std::optional<token_event>>> next_while_sending(sse_writer& out, token_stream& tokens,
                                                                       std::string& pending) {
    using namespace asio::experimental::awaitable_operators;
    if (pending.empty()) {
        co_return co_await tokens.next();
    }
    auto both = co_await (tokens.next() && send_in_parallel(out, pending));
    pending.clear();
    co_return std::move(std::get<0>(both));
}

} // namespace sluice::server
