// async_event's completion: always posted (through the event's executor, then the waiter's own executor), so a
// set() never runs a waiter inline.
#include "base/async_event.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

namespace sluice {

void async_event::shared_state::complete(handler_type handler, boost::system::error_code ec) {
    boost::asio::post(executor, boost::asio::append(std::move(handler), ec));
}

} // namespace sluice
