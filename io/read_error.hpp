// Errors a read can end with: unexpected end of file, an errno from the kernel, or cancellation.
#pragma once

#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace sluice::io {

/// Error codes of io/ that have no errno equivalent.
enum class read_errc {
    unexpected_eof = 1, ///< the file ended before the requested range did
};

/// The category of `read_errc` ("sluice.io").
const std::error_category& read_category() noexcept;

inline std::error_code make_error_code(read_errc e) noexcept {
    return {static_cast<int>(e), read_category()};
}

/// "PATH: unexpected end of file at offset N (wanted M bytes)".
error make_eof_error(std::string_view path, std::uint64_t offset, std::size_t wanted);
/// "PATH: read of M bytes at offset N failed: <strerror>", with the errno as code.
error make_read_errno_error(std::string_view path, std::uint64_t offset, std::size_t wanted, int err);
/// "PATH: read of M bytes at offset N cancelled", code std::errc::operation_canceled.
error make_cancelled_error(std::string_view path, std::uint64_t offset, std::size_t wanted);

} // namespace sluice::io

template <>
struct std::is_error_code_enum<sluice::io::read_errc> : std::true_type {};
