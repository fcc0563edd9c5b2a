// Error values shared by every Sluice module: an error code plus a human-readable message with context.
#pragma once

#include <boost/system/result.hpp>

#include <string>
#include <system_error>
#include <utility>

namespace sluice {

/// An expected failure: a machine-checkable code and a message that names what failed and where
/// ("tensor blk.3.ffn_up_exps: offset past end of file"). Loading stages add context with `with_context`.
struct error {
    std::error_code code;
    std::string message;

    /// Returns a copy whose message is prefixed with `context` ("context: message").
    [[nodiscard]] error with_context(std::string_view context) const {
        std::string m(context);
        m += ": ";
        m += message;
        return error{code, std::move(m)};
    }
};

/// Builds an error from an errno-style value and a message.
inline error make_error(std::errc code, std::string message) {
    return error{std::make_error_code(code), std::move(message)};
}

/// Builds an error from a raw errno value and a message; the message gets strerror appended.
error make_errno_error(int err, std::string message);

/// Exception carrying an `error`; thrown only when `result<T>::value()` is called on a failure.
class error_exception : public std::runtime_error {
public:
    explicit error_exception(error e) : std::runtime_error(e.message), error_(std::move(e)) {}
    const sluice::error& err() const noexcept { return error_; }

private:
    sluice::error error_;
};

[[noreturn]] void throw_exception_from_error(const error& e, const boost::source_location& loc);

/// The value-or-error type every fallible Sluice function returns.
template <class T>
using result = boost::system::result<T, error>;

} // namespace sluice
