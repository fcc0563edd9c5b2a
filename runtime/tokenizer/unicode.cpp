// Category lookups over the generated run table, plus UTF-8 encoding and decoding.
#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <array>

namespace sluice::tokenizer {
namespace {

bool is_white_space(std::uint32_t cp) noexcept {
    for (std::size_t i = 0; i < detail::white_space_range_count; ++i) {
        const auto& r = detail::white_space_ranges[i];
        if (cp >= r.first && cp <= r.last)
            return true;
    }
    return false;
}

std::uint8_t flags_from_category(general_category c) noexcept {
    using enum general_category;
    switch (c) {
    case Lu:
    case Lt:
        return cp_flag::letter | cp_flag::upper;
    case Ll:
        return cp_flag::letter | cp_flag::lower;
    case Lm:
    case Lo:
        return cp_flag::letter;
    case Mn:
    case Mc:
    case Me:
        return cp_flag::mark;
    case Nd:
    case Nl:
    case No:
        return cp_flag::number;
    case Pc:
    case Pd:
    case Ps:
    case Pe:
    case Pi:
    case Pf:
    case Po:
        return cp_flag::punct;
    case Sm:
    case Sc:
    case Sk:
    case So:
        return cp_flag::symbol;
    default:
        return 0;
    }
}

std::uint8_t compute_flags(std::uint32_t cp) noexcept {
    std::uint8_t f = flags_from_category(category_of(cp));
    if (is_white_space(cp))
        f |= cp_flag::space;
    return f;
}

const std::array<std::uint8_t, 128>& ascii_flags() {
    static const std::array<std::uint8_t, 128> table = [] {
        std::array<std::uint8_t, 128> t{};
        for (std::uint32_t c = 0; c < 128; ++c)
            t[c] = compute_flags(c);
        return t;
    }();
    return table;
}

} // namespace

general_category category_of(std::uint32_t cp) noexcept {
    if (cp > 0x10FFFF)
        return general_category::Cn;
    const auto* begin = detail::category_runs;
    const auto* end = begin + detail::category_run_count;
    const auto* it =
        std::upper_bound(begin, end, cp, [](std::uint32_t v, const detail::category_run& r) { return v < r.first; });
    return (it - 1)->category;
}

std::uint8_t flags_of(std::uint32_t cp) noexcept {
    if (cp < 128)
        return ascii_flags()[cp];
    return compute_flags(cp);
}

std::size_t utf8_sequence_length(unsigned char lead) noexcept {
    if (lead < 0x80)
        return 1;
    if ((lead & 0xE0) == 0xC0)
        return 2;
    if ((lead & 0xF0) == 0xE0)
        return 3;
    if ((lead & 0xF8) == 0xF0)
        return 4;
    return 1;
}

std::uint32_t decode_utf8(std::string_view s, std::size_t pos, std::size_t& len) noexcept {
    const auto lead = static_cast<unsigned char>(s[pos]);
    len = 1;
    if (lead < 0x80)
        return lead;
    const std::size_t n = utf8_sequence_length(lead);
    if (n == 1 || pos + n > s.size())
        return 0xFFFD;
    std::uint32_t cp = lead & (0x7F >> n);
    for (std::size_t i = 1; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[pos + i]);
        if ((c & 0xC0) != 0x80)
            return 0xFFFD;
        cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr std::uint32_t min_value[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_value[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0xFFFD;
    len = n;
    return cp;
}

std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0, len = 0; i < s.size(); i += len) {
        append_utf8(out, decode_utf8(s, i, len));
    }
    return out;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

} // namespace sluice::tokenizer
