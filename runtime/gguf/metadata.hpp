// GGUF key/value metadata: an ordered list of entries with lookup by key and typed, checked accessors.
#pragma once

#include "runtime/gguf/value.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::gguf {

/// Builds a value holding exactly type `T` (no implicit conversion between alternatives).
template <class T>
metadata_value make_value(T v) {
    return metadata_value{value_storage(std::in_place_type<T>, std::move(v))};
}

/// One key/value pair.
struct metadata_entry {
    std::string key;
    metadata_value value;

    friend bool operator==(const metadata_entry&, const metadata_entry&) = default;
};

/// Well-known keys.
namespace keys {
inline constexpr std::string_view architecture = "general.architecture";
inline constexpr std::string_view alignment = "general.alignment";
inline constexpr std::string_view name = "general.name";
inline constexpr std::string_view split_no = "split.no";
inline constexpr std::string_view split_count = "split.count";
inline constexpr std::string_view split_tensors_count = "split.tensors.count";
inline constexpr std::string_view tokenizer_model = "tokenizer.ggml.model";
inline constexpr std::string_view tokenizer_pre = "tokenizer.ggml.pre";
inline constexpr std::string_view tokenizer_tokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view tokenizer_scores = "tokenizer.ggml.scores";
inline constexpr std::string_view tokenizer_token_type = "tokenizer.ggml.token_type";
inline constexpr std::string_view tokenizer_merges = "tokenizer.ggml.merges";
inline constexpr std::string_view tokenizer_bos_id = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view tokenizer_eos_id = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view chat_template = "tokenizer.chat_template";
} // namespace keys

/// Ordered GGUF metadata. Keys are unique; `set` on an existing key replaces its value in place.
///
/// Accessors return errors naming the key and the expected and actual type ("metadata key
/// qwen3moe.block_count: expected u32, found string"). Integer accessors accept any integer type whose
/// value fits (converters disagree on u32 vs i32); float accessors accept f32 and f64.
/// Not thread-safe for writes; concurrent reads are fine.
class metadata {
public:
    /// Entries in file order.
    [[nodiscard]] std::span<const metadata_entry> entries() const noexcept { return entries_; }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
    [[nodiscard]] bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
    /// The value of `key`, or nullptr when absent.
    [[nodiscard]] const metadata_value* find(std::string_view key) const noexcept;

    /// Appends or replaces `key`.
    void set(std::string_view key, metadata_value value);
    /// Appends `key`; returns false (and changes nothing) when the key already exists.
    bool insert(std::string key, metadata_value value);
    /// Removes `key`; returns whether it was present.
    bool erase(std::string_view key);

    // Typed setters for writers.
    void set_u8(std::string_view key, std::uint8_t v) { set(key, make_value<std::uint8_t>(v)); }
    void set_i8(std::string_view key, std::int8_t v) { set(key, make_value<std::int8_t>(v)); }
    void set_u16(std::string_view key, std::uint16_t v) { set(key, make_value<std::uint16_t>(v)); }
    void set_i16(std::string_view key, std::int16_t v) { set(key, make_value<std::int16_t>(v)); }
    void set_u32(std::string_view key, std::uint32_t v) { set(key, make_value<std::uint32_t>(v)); }
    void set_i32(std::string_view key, std::int32_t v) { set(key, make_value<std::int32_t>(v)); }
    void set_u64(std::string_view key, std::uint64_t v) { set(key, make_value<std::uint64_t>(v)); }
    void set_i64(std::string_view key, std::int64_t v) { set(key, make_value<std::int64_t>(v)); }
    void set_f32(std::string_view key, float v) { set(key, make_value<float>(v)); }
    void set_f64(std::string_view key, double v) { set(key, make_value<double>(v)); }
    void set_bool(std::string_view key, bool v) { set(key, make_value<bool>(v)); }
    void set_string(std::string_view key, std::string v) { set(key, make_value<std::string>(std::move(v))); }
    void set_array(std::string_view key, metadata_array v) { set(key, make_value<metadata_array>(std::move(v))); }
    /// Sets an array of any element vector type, e.g. `set_array(k, std::vector<std::string>{...})`.
    template <class T>
    void set_array(std::string_view key, std::vector<T> items) {
        set(key, make_value<metadata_array>(metadata_array{array_storage(std::move(items))}));
    }

    // Typed accessors: an error when the key is missing or has another type or an out-of-range value.
    [[nodiscard]] result<std::uint32_t> get_u32(std::string_view key) const;
    [[nodiscard]] result<std::int32_t> get_i32(std::string_view key) const;
    [[nodiscard]] result<std::uint64_t> get_u64(std::string_view key) const;
    [[nodiscard]] result<std::int64_t> get_i64(std::string_view key) const;
    [[nodiscard]] result<float> get_f32(std::string_view key) const;
    [[nodiscard]] result<double> get_f64(std::string_view key) const;
    [[nodiscard]] result<bool> get_bool(std::string_view key) const;
    [[nodiscard]] result<std::string_view> get_string(std::string_view key) const;
    [[nodiscard]] result<const metadata_array*> get_array(std::string_view key) const;
    [[nodiscard]] result<std::span<const std::string>> get_array_of_strings(std::string_view key) const;
    [[nodiscard]] result<std::span<const float>> get_array_of_f32(std::string_view key) const;
    [[nodiscard]] result<std::span<const std::int32_t>> get_array_of_i32(std::string_view key) const;

    /// Like get_u32, but nullopt when the key is absent (an error only for a wrong type or value).
    [[nodiscard]] result<std::optional<std::uint32_t>> find_u32(std::string_view key) const;
    /// Like get_string, but nullopt when the key is absent.
    [[nodiscard]] result<std::optional<std::string_view>> find_string(std::string_view key) const;

    friend bool operator==(const metadata& a, const metadata& b) { return a.entries_ == b.entries_; }

private:
    [[nodiscard]] result<const metadata_value*> require(std::string_view key) const;
    template <class T>
    [[nodiscard]] result<std::span<const T>> get_typed_array(std::string_view key, value_type expected) const;

    struct key_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };

    std::vector<metadata_entry> entries_;
    std::unordered_map<std::string, std::size_t, key_hash, std::equal_to<>> index_; ///< key -> entries_ index
};

/// Error for a key of the wrong type: "metadata key K: expected E, found A".
error wrong_type_error(std::string_view key, std::string_view expected, const metadata_value& found);

} // namespace sluice::gguf
