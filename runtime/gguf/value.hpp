// GGUF metadata values: the thirteen value types, typed arrays (nested to any depth) and display helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::gguf {

/// Metadata value type ids as stored in GGUF files.
enum class value_type : std::uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};

/// Number of value types; raw ids at or above this are invalid.
inline constexpr std::uint32_t value_type_count = 13;

/// Lower-case name of a type ("u32", "string", "array", ...).
std::string_view to_string(value_type type) noexcept;

/// Bytes one value of a fixed-size type takes in a file; 0 for string and array.
std::size_t fixed_size(value_type type) noexcept;

struct metadata_array;

/// Storage of an array: one vector per element type; the alternative index equals the `value_type` id.
using array_storage =
    std::variant<std::vector<std::uint8_t>, std::vector<std::int8_t>, std::vector<std::uint16_t>,
                 std::vector<std::int16_t>, std::vector<std::uint32_t>, std::vector<std::int32_t>, std::vector<float>,
                 std::vector<bool>, std::vector<std::string>, std::vector<metadata_array>, std::vector<std::uint64_t>,
                 std::vector<std::int64_t>, std::vector<double>>;

/// A homogeneous GGUF array. Arrays of arrays hold `metadata_array` elements (each with its own element type).
struct metadata_array {
    array_storage items;

    /// The element type.
    [[nodiscard]] value_type element_type() const noexcept { return static_cast<value_type>(items.index()); }
    /// Number of elements.
    [[nodiscard]] std::size_t size() const noexcept;
    /// The elements as a vector of `T` when the element type matches, else nullptr.
    template <class T>
    [[nodiscard]] const std::vector<T>* as() const noexcept {
        return std::get_if<std::vector<T>>(&items);
    }

    friend bool operator==(const metadata_array&, const metadata_array&) = default;
};

/// Storage of one value; the alternative index equals the `value_type` id.
using value_storage = std::variant<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t,
                                   float, bool, std::string, metadata_array, std::uint64_t, std::int64_t, double>;

/// One metadata value of any GGUF type.
struct metadata_value {
    value_storage data;

    /// The value's type.
    [[nodiscard]] value_type type() const noexcept { return static_cast<value_type>(data.index()); }
    /// The value as an unsigned integer when it is an integer type holding a non-negative value.
    [[nodiscard]] std::optional<std::uint64_t> as_unsigned() const noexcept;
    /// The value as a signed integer when it is an integer type whose value fits in int64.
    [[nodiscard]] std::optional<std::int64_t> as_signed() const noexcept;
    /// The value as a double when it is a float or integer type.
    [[nodiscard]] std::optional<double> as_double() const noexcept;
    /// The string, or nullptr when the value is not a string.
    [[nodiscard]] const std::string* as_string() const noexcept { return std::get_if<std::string>(&data); }
    /// The array, or nullptr when the value is not an array.
    [[nodiscard]] const metadata_array* as_array() const noexcept { return std::get_if<metadata_array>(&data); }

    friend bool operator==(const metadata_value&, const metadata_value&) = default;
};

/// Type name including the element type of arrays ("array[string]", "array[array[i32]]").
std::string type_name(const metadata_value& value);

/// Short human-readable rendering: scalars as written, strings quoted and cut at `max_chars`,
/// arrays as their first `max_items` elements then "... (N items)".
std::string to_display_string(const metadata_value& value, std::size_t max_items = 8, std::size_t max_chars = 80);

/// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text) noexcept;

} // namespace sluice::gguf
