// Example: the smallest generator. Loads a model, generates from a prompt and prints the text as it streams.
// Usage: generate MODEL.gguf PROMPT [MAX_TOKENS]
#include <sluice/model.hpp>
#include <sluice/session.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace asio = boost::asio;

namespace {

asio::awaitable<int> generate(std::string path, std::string prompt, std::uint32_t max_tokens) {
    // Load: weights are read through io_uring on this coroutine's executor.
    auto loaded = co_await sluice::model::load(path);
    if (!loaded) {
        std::cerr << "generate: " << loaded.error().message << "\n";
        co_return 1;
    }
    sluice::session session(*loaded);

    // Generate: every co_await of next() runs the forward pass for one more token.
    sluice::generate_request request;
    request.prompt = std::move(prompt);
    request.max_tokens = max_tokens;
    auto stream = session.generate(std::move(request));
    for (;;) {
        auto event = co_await stream.next();
        if (!event) {
            std::cerr << "\ngenerate: " << event.error().message << "\n";
            co_return 1;
        }
        if (!*event) {
            break; // the generation ended
        }
        std::cout << (*event)->text << std::flush;
    }
    const auto& summary = stream.summary();
    std::cout << "\n";
    std::cerr << summary.completion_tokens << " tokens, finish reason " << sluice::to_string(summary.reason) << "\n";
    co_return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: generate MODEL.gguf PROMPT [MAX_TOKENS]\n";
        return 2;
    }
    const std::uint32_t max_tokens = argc > 3 ? static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 64;
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, generate(argv[1], argv[2], max_tokens),
                   [&](std::exception_ptr e, int rc) { status = e ? 1 : rc; });
    ioc.run();
    return status;
}
