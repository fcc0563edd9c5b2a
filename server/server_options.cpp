// Parsers of the command line's sizes and durations.
#include "server/server_options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace sluice::server {
namespace {

/// Splits "123unit" into the number and the lower-cased unit; nullopt when there is no leading number.
bool split_number(std::string_view text, std::uint64_t& number, std::string& unit) {
    const auto* first = text.data();
    const auto* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, number);
    if (ec != std::errc{} || end == first) {
        return false;
    }
    unit.assign(end, last);
    std::transform(unit.begin(), unit.end(), unit.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return true;
}

} // namespace

result<std::size_t> parse_size(std::string_view text) {
    std::uint64_t n = 0;
    std::string unit;
    if (!split_number(text, n, unit)) {
        return make_error(std::errc::invalid_argument, "invalid size '" + std::string(text) + "'");
    }
    std::uint64_t scale = 0;
    if (unit.empty() || unit == "b") {
        scale = 1;
    } else if (unit == "kb") {
        scale = 1000;
    } else if (unit == "mb") {
        scale = 1000 * 1000;
    } else if (unit == "gb") {
        scale = 1000 * 1000 * 1000;
    } else if (unit == "kib") {
        scale = 1024;
    } else if (unit == "mib") {
        scale = 1024 * 1024;
    } else if (unit == "gib") {
        scale = 1024 * 1024 * 1024;
    } else {
        return make_error(std::errc::invalid_argument,
                          "invalid size '" + std::string(text) + "' (units: B, KB, MB, GB, KiB, MiB, GiB)");
    }
    if (n > std::numeric_limits<std::size_t>::max() / scale) {
        return make_error(std::errc::invalid_argument, "size '" + std::string(text) + "' is too large");
    }
    return static_cast<std::size_t>(n * scale);
}

result<std::chrono::milliseconds> parse_duration(std::string_view text) {
    std::uint64_t n = 0;
    std::string unit;
    if (!split_number(text, n, unit)) {
        return make_error(std::errc::invalid_argument, "invalid duration '" + std::string(text) + "'");
    }
    std::uint64_t scale = 0;
    if (unit == "ms") {
        scale = 1;
    } else if (unit.empty() || unit == "s") {
        scale = 1000;
    } else if (unit == "m") {
        scale = 60'000;
    } else if (unit == "h") {
        scale = 3'600'000;
    } else {
        return make_error(std::errc::invalid_argument,
                          "invalid duration '" + std::string(text) + "' (units: ms, s, m, h)");
    }
    if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / scale / 2) {
        return make_error(std::errc::invalid_argument, "duration '" + std::string(text) + "' is too long");
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(n * scale));
}

} // namespace sluice::server
