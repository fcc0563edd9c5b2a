// Example: two generations at once on one io_context, sharing one model. The second is cancelled after a few
// tokens through a cancellation_signal bound to its co_spawn, as a server does when a client goes away; the
// first runs to its end. Usage: concurrent MODEL.gguf [CANCEL_AFTER]
#include <sluice/model.hpp>
#include <sluice/session.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

namespace asio = boost::asio;

namespace {

/// What one generation produced.
struct outcome {
    std::string text;
    std::uint32_t tokens = 0;
    sluice::finish_reason reason = sluice::finish_reason::stop;
    bool finished = false;
};

/// Generates from `prompt` in a session of its own; calls `on_token` after every token. A cancellation of the
/// awaiting coroutine (the slot bound at co_spawn) ends the stream with finish_reason::cancelled.
asio::awaitable<void> generate(std::shared_ptr<sluice::model> model, std::string prompt, std::uint32_t max_tokens,
                               outcome& out, std::function<void(std::uint32_t)> on_token) {
    // Let a cancellation reach the stream (which then ends with `cancelled`) instead of making this
    // coroutine's next co_await throw operation_aborted.
    co_await asio::this_coro::throw_if_cancelled(false);
    sluice::session session(std::move(model));
    sluice::generate_request request;
    request.prompt = std::move(prompt);
    request.max_tokens = max_tokens;
    request.ignore_eos = true;
    request.sampling.seed = 7;
    auto stream = session.generate(std::move(request));
    for (;;) {
        auto event = co_await stream.next();
        if (!event) {
            std::cerr << "concurrent: " << event.error().message << "\n";
            co_return;
        }
        if (!*event) {
            break;
        }
        out.text += (*event)->text;
        if ((*event)->token >= 0) {
            on_token(++out.tokens);
        }
    }
    out.reason = stream.summary().reason;
    out.finished = true;
}

/// Completion handler of a co_spawn: exceptions are failures of the example, so they leave main.
void rethrow_if(const std::exception_ptr& e) {
    if (e) {
        std::rethrow_exception(e);
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: concurrent MODEL.gguf [CANCEL_AFTER]\n";
        return 2;
    }
    const std::uint32_t cancel_after = argc > 2 ? static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 4;
    asio::io_context ioc;

    // Load once; both sessions share the weights.
    std::shared_ptr<sluice::model> model;
    asio::co_spawn(ioc, sluice::model::load(argv[1]),
                   [&](std::exception_ptr e, sluice::result<std::shared_ptr<sluice::model>> r) {
                       if (!e && !r) {
                           std::cerr << "concurrent: " << r.error().message << "\n";
                       }
                       if (!e && r) {
                           model = std::move(*r);
                       }
                       rethrow_if(e);
                   });
    ioc.run();
    if (!model) {
        return 1;
    }
    ioc.restart();

    // Two generations on one thread: their steps interleave at every co_await.
    outcome first;
    outcome second;
    asio::cancellation_signal stop_second;
    std::uint32_t first_tokens_at_cancel = 0;
    asio::co_spawn(ioc, generate(model, "The first story", 24, first, [](std::uint32_t) {}), rethrow_if);
    asio::co_spawn(ioc,
                   generate(model, "The second story", 1000, second,
                            [&](std::uint32_t n) {
                                // Cancel from outside the coroutine, as another component would.
                                if (n == cancel_after) {
                                    asio::post(ioc, [&] {
                                        first_tokens_at_cancel = first.tokens;
                                        stop_second.emit(asio::cancellation_type::terminal);
                                    });
                                }
                            }),
                   asio::bind_cancellation_slot(stop_second.slot(), rethrow_if));
    ioc.run();

    std::cout << "first:  " << first.tokens << " tokens, " << sluice::to_string(first.reason) << ": " << first.text
              << "\n";
    std::cout << "second: " << second.tokens << " tokens, " << sluice::to_string(second.reason) << ": " << second.text
              << "\n";
    std::cout << "the first had " << first_tokens_at_cancel << " tokens when the second was cancelled\n";
    const bool ok = first.finished && first.reason != sluice::finish_reason::cancelled && second.finished &&
                    second.reason == sluice::finish_reason::cancelled;
    std::cout << (ok ? "first completed, second cancelled\n" : "unexpected outcome\n");
    return ok ? 0 : 1;
}
