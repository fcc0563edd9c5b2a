// The public speculative_mode names (sluice/speculative.hpp), apart from the engine so that request parsers link
// them alone.
#include "sluice/speculative.hpp"

namespace sluice {

std::string_view to_string(speculative_mode m) noexcept {
    switch (m) {
    case speculative_mode::off:
        return "off";
    case speculative_mode::lookup:
        return "lookup";
    case speculative_mode::draft:
        return "draft";
    case speculative_mode::mtp:
        return "mtp";
    }
    return "off";
}

std::optional<speculative_mode> parse_speculative_mode(std::string_view text) noexcept {
    for (const auto m :
         {speculative_mode::off, speculative_mode::lookup, speculative_mode::draft, speculative_mode::mtp}) {
        if (text == to_string(m)) {
            return m;
        }
    }
    return std::nullopt;
}

} // namespace sluice
