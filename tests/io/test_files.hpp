// Helpers for io tests: random files on a filesystem that supports O_DIRECT, and running coroutines to the end.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace sluice::io::test {

/// A folder under the build tree (ext4 here, so O_DIRECT works; /tmp may be tmpfs elsewhere), one per process
/// because ctest runs tests as parallel processes; removed when the process exits.
inline std::filesystem::path data_dir() {
    struct process_dir {
        std::filesystem::path path = std::filesystem::path(SLUICE_BINARY_DIR) / "tests" / "io" / "data" /
                                     std::to_string(::getpid());
        process_dir() { std::filesystem::create_directories(path); }
        ~process_dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const process_dir dir;
    return dir.path;
}

/// Writes `size` pseudo-random bytes to `path` and returns them.
inline std::vector<std::byte> write_random_file(const std::filesystem::path& path, std::size_t size,
                                                std::uint64_t seed) {
    std::vector<std::byte> bytes(size);
    std::mt19937_64 rng(seed);
    for (auto& b : bytes) {
        b = static_cast<std::byte>(rng() & 0xff);
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

/// Runs `aw` on `ctx` until the context runs out of work; rethrows its exception.
template <class T>
T run_to_end(boost::asio::io_context& ctx, boost::asio::awaitable<T> aw) {
    std::optional<T> out;
    std::exception_ptr failure;
    boost::asio::co_spawn(ctx, std::move(aw), [&](std::exception_ptr e, T value) {
        failure = e;
        out.emplace(std::move(value));
    });
    ctx.run();
    ctx.restart();
    if (failure) {
        std::rethrow_exception(failure);
    }
    return std::move(*out);
}

} // namespace sluice::io::test
