// Out-of-line parts of sluice::error (include/sluice/error.hpp).
#include "sluice/error.hpp"

#include <cstring>

namespace sluice {

error make_errno_error(int err, std::string message) {
    message += ": ";
    message += std::strerror(err);
    return error{std::error_code(err, std::generic_category()), std::move(message)};
}

void throw_exception_from_error(const error& e, const boost::source_location&) { throw error_exception(e); }

} // namespace sluice
