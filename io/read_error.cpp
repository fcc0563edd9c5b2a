// Messages and the error category for read failures.
#include "io/read_error.hpp"

#include <string>

namespace sluice::io {
namespace {

class read_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "sluice.io"; }
    std::string message(int value) const override {
        switch (static_cast<read_errc>(value)) {
        case read_errc::unexpected_eof:
            return "unexpected end of file";
        }
        return "unknown io error";
    }
};

std::string describe_range(std::uint64_t offset, std::size_t wanted) {
    return "read of " + std::to_string(wanted) + " bytes at offset " + std::to_string(offset);
}

} // namespace

const std::error_category& read_category() noexcept {
    static const read_category_impl category;
    return category;
}

error make_eof_error(std::string_view path, std::uint64_t offset, std::size_t wanted) {
    std::string m(path);
    m += ": unexpected end of file at offset " + std::to_string(offset) + " (wanted " + std::to_string(wanted) +
         " bytes)";
    return error{make_error_code(read_errc::unexpected_eof), std::move(m)};
}

error make_read_errno_error(std::string_view path, std::uint64_t offset, std::size_t wanted, int err) {
    std::string m(path);
    m += ": " + describe_range(offset, wanted) + " failed";
    return make_errno_error(err, std::move(m));
}

error make_cancelled_error(std::string_view path, std::uint64_t offset, std::size_t wanted) {
    std::string m(path);
    m += ": " + describe_range(offset, wanted) + " cancelled";
    return make_error(std::errc::operation_canceled, std::move(m));
}

} // namespace sluice::io
