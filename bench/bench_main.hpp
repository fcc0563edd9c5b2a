// Small pieces the benchmark programs share: running a coroutine to completion, and reading a whole-number
// argument with a clear message instead of an exception.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

namespace sluice::bench {

/// Runs the coroutine `make` returns on a fresh io_context and returns its result (rethrowing its exception).
template <class T>
T run(std::function<boost::asio::awaitable<T>()> make) {
    boost::asio::io_context io;
    auto fut = boost::asio::co_spawn(io, make(), boost::asio::use_future);
    io.run();
    return fut.get();
}

/// argv[i] as a whole non-negative number, `fallback` when absent; on anything else prints "PROGRAM: argument i
/// ("...") is not a whole number" to stderr and returns nullopt (the caller exits with status 2).
inline std::optional<unsigned long> count_arg(const char* program, int argc, char** argv, int i,
                                              unsigned long fallback) {
    if (argc <= i) {
        return fallback;
    }
    char* end = nullptr;
    const unsigned long v = std::strtoul(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0' || argv[i][0] == '-') {
        std::fprintf(stderr, "%s: argument %d (\"%s\") is not a whole number\n", program, i, argv[i]);
        return std::nullopt;
    }
    return v;
}

} // namespace sluice::bench
