// io::make_reader: picks the backend at start-up (io_uring if the kernel allows, else pread) and says why.
#include "io/pread_reader.hpp"
#include "io/reader.hpp"
#include "io/uring_reader.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace sluice::io {
namespace {

/// Applies SLUICE_IO_BACKEND on top of the asked backend.
result<backend> chosen_backend(backend asked) {
    const char* env = std::getenv("SLUICE_IO_BACKEND");
    if (env == nullptr || *env == '\0') {
        return asked;
    }
    const std::string_view value(env);
    if (value == "io_uring") {
        return backend::io_uring;
    }
    if (value == "pread") {
        return backend::pread;
    }
    if (value == "auto") {
        return backend::auto_select;
    }
    return make_error(std::errc::invalid_argument,
                      "SLUICE_IO_BACKEND=" + std::string(value) + ": expected io_uring, pread or auto");
}

} // namespace

result<std::unique_ptr<reader>> make_reader(boost::asio::any_io_executor executor, reader_options options) {
    if (options.queue_depth == 0 || options.pread_threads == 0) {
        return make_error(std::errc::invalid_argument, "reader options: queue_depth and pread_threads must be > 0");
    }
    auto which = chosen_backend(options.force);
    if (!which) {
        return which.error();
    }
    if (*which != backend::pread) {
        auto uring = uring_reader::create(executor, options.queue_depth);
        if (uring) {
            spdlog::debug("io: reading with io_uring, queue depth {}", options.queue_depth);
            return std::unique_ptr<reader>(std::move(*uring));
        }
        if (*which == backend::io_uring) {
            return uring.error().with_context("io_uring backend was forced");
        }
        spdlog::warn("io: io_uring unavailable ({}); falling back to a pread pool of {} threads", uring.error().message,
                     options.pread_threads);
    }
    return std::unique_ptr<reader>(std::make_unique<pread_reader>(std::move(executor), options.pread_threads));
}

} // namespace sluice::io
