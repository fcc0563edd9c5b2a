// GGUF metadata values: type names, numeric conversions, display rendering and UTF-8 validation.
#include "runtime/gguf/value.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

namespace sluice::gguf {
namespace {

constexpr std::array<std::string_view, value_type_count> type_names{
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

constexpr std::array<std::size_t, value_type_count> type_sizes{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

std::string quoted(std::string_view s, std::size_t max_chars) {
    std::string out = "\"";
    std::size_t n = 0;
    for (char c : s) {
        if (n++ == max_chars) {
            out += "...";
            break;
        }
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += '?';
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

template <class T>
std::string scalar_text(const T& v, std::size_t max_items, std::size_t max_chars) {
    if constexpr (std::is_same_v<T, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::string>) {
        return quoted(v, max_chars);
    } else if constexpr (std::is_same_v<T, metadata_array>) {
        return to_display_string(metadata_value{v}, max_items, max_chars);
    } else if constexpr (std::is_floating_point_v<T>) {
        std::string s = std::to_string(v);
        while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') {
            s.pop_back();
        }
        return s;
    } else {
        return std::to_string(v);
    }
}

} // namespace

std::string_view to_string(value_type type) noexcept {
    const auto i = static_cast<std::uint32_t>(type);
    return i < value_type_count ? type_names[i] : std::string_view("invalid");
}

std::size_t fixed_size(value_type type) noexcept {
    const auto i = static_cast<std::uint32_t>(type);
    return i < value_type_count ? type_sizes[i] : 0;
}

std::size_t metadata_array::size() const noexcept {
    return std::visit([](const auto& v) { return v.size(); }, items);
}

std::optional<std::uint64_t> metadata_value::as_unsigned() const noexcept {
    return std::visit(
        [](const auto& v) -> std::optional<std::uint64_t> {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                if constexpr (std::is_signed_v<T>) {
                    if (v < 0) {
                        return std::nullopt;
                    }
                }
                return static_cast<std::uint64_t>(v);
            }
            return std::nullopt;
        },
        data);
}

std::optional<std::int64_t> metadata_value::as_signed() const noexcept {
    return std::visit(
        [](const auto& v) -> std::optional<std::int64_t> {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::uint64_t>) {
                if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                    return std::nullopt;
                }
                return static_cast<std::int64_t>(v);
            } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                return static_cast<std::int64_t>(v);
            }
            return std::nullopt;
        },
        data);
}

std::optional<double> metadata_value::as_double() const noexcept {
    return std::visit(
        [](const auto& v) -> std::optional<double> {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
                return static_cast<double>(v);
            }
            return std::nullopt;
        },
        data);
}

std::string type_name(const metadata_value& value) {
    const auto* arr = value.as_array();
    if (arr == nullptr) {
        return std::string(to_string(value.type()));
    }
    // Arrays of arrays name the element type of their first element, the only one a reader can show briefly.
    const auto* nested = arr->as<metadata_array>();
    if (nested != nullptr && !nested->empty()) {
        return "array[" + type_name(metadata_value{nested->front()}) + "]";
    }
    return "array[" + std::string(to_string(arr->element_type())) + "]";
}

std::string to_display_string(const metadata_value& value, std::size_t max_items, std::size_t max_chars) {
    const auto* arr = value.as_array();
    if (arr == nullptr) {
        return std::visit([&](const auto& v) { return scalar_text(v, max_items, max_chars); }, value.data);
    }
    return std::visit(
        [&](const auto& items) {
            std::string out = "[";
            std::size_t i = 0;
            for (const auto& item : items) {
                if (i == max_items) {
                    out += ", ...";
                    break;
                }
                if (i++ != 0) {
                    out += ", ";
                }
                using T = typename std::decay_t<decltype(items)>::value_type;
                out += scalar_text<T>(item, max_items, max_chars);
            }
            out += "]";
            if (items.size() > max_items) {
                out += " (" + std::to_string(items.size()) + " items)";
            }
            return out;
        },
        arr->items);
}

bool is_valid_utf8(std::string_view text) noexcept {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (text.size() - i < len) {
            return false;
        }
        for (std::size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(text[i + k]);
            if ((cc & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (cc & 0x3F);
        }
        constexpr std::array<std::uint32_t, 5> min_cp{0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += len;
    }
    return true;
}

} // namespace sluice::gguf
