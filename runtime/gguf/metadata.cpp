// GGUF key/value metadata: ordered storage, lookup and typed accessors with errors naming the key.
#include "runtime/gguf/metadata.hpp"

#include "runtime/gguf/try.hpp"

#include <cmath>
#include <limits>

namespace sluice::gguf {
namespace {

std::string key_prefix(std::string_view key) {
    std::string m = "metadata key ";
    m += key;
    m += ": ";
    return m;
}

template <class T>
result<T> checked_integer(std::string_view key, std::string_view expected, const metadata_value& v) {
    if constexpr (std::is_signed_v<T>) {
        const auto s = v.as_signed();
        if (s && *s >= std::numeric_limits<T>::min() && *s <= std::numeric_limits<T>::max()) {
            return static_cast<T>(*s);
        }
    } else {
        const auto u = v.as_unsigned();
        if (u && *u <= std::numeric_limits<T>::max()) {
            return static_cast<T>(*u);
        }
    }
    if (v.as_signed() || v.as_unsigned()) {
        return make_error(std::errc::result_out_of_range, key_prefix(key) + "value " + to_display_string(v) +
                                                              " does not fit in " + std::string(expected));
    }
    return wrong_type_error(key, expected, v);
}

} // namespace

error wrong_type_error(std::string_view key, std::string_view expected, const metadata_value& found) {
    return make_error(std::errc::invalid_argument,
                      key_prefix(key) + "expected " + std::string(expected) + ", found " + type_name(found));
}

const metadata_value* metadata::find(std::string_view key) const noexcept {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].value;
}

void metadata::set(std::string_view key, metadata_value value) {
    const auto it = index_.find(key);
    if (it != index_.end()) {
        entries_[it->second].value = std::move(value);
        return;
    }
    index_.emplace(std::string(key), entries_.size());
    entries_.push_back({std::string(key), std::move(value)});
}

bool metadata::insert(std::string key, metadata_value value) {
    if (index_.find(key) != index_.end()) {
        return false;
    }
    index_.emplace(key, entries_.size());
    entries_.push_back({std::move(key), std::move(value)});
    return true;
}

bool metadata::erase(std::string_view key) {
    const auto it = index_.find(key);
    if (it == index_.end()) {
        return false;
    }
    const std::size_t pos = it->second;
    index_.erase(it);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(pos));
    for (auto& [k, i] : index_) {
        if (i > pos) {
            --i;
        }
    }
    return true;
}

result<const metadata_value*> metadata::require(std::string_view key) const {
    const auto* v = find(key);
    if (v == nullptr) {
        return make_error(std::errc::invalid_argument, key_prefix(key) + "missing");
    }
    return v;
}

result<std::uint32_t> metadata::get_u32(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    return checked_integer<std::uint32_t>(key, "u32", *v);
}

result<std::int32_t> metadata::get_i32(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    return checked_integer<std::int32_t>(key, "i32", *v);
}

result<std::uint64_t> metadata::get_u64(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    return checked_integer<std::uint64_t>(key, "u64", *v);
}

result<std::int64_t> metadata::get_i64(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    return checked_integer<std::int64_t>(key, "i64", *v);
}

result<double> metadata::get_f64(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    if (v->type() == value_type::f32 || v->type() == value_type::f64) {
        return *v->as_double();
    }
    return wrong_type_error(key, "f32 or f64", *v);
}

result<float> metadata::get_f32(std::string_view key) const {
    SLUICE_GGUF_TRY(const double d, get_f64(key));
    return static_cast<float>(d);
}

result<bool> metadata::get_bool(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    if (const auto* b = std::get_if<bool>(&v->data)) {
        return *b;
    }
    return wrong_type_error(key, "bool", *v);
}

result<std::string_view> metadata::get_string(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    if (const auto* s = v->as_string()) {
        return std::string_view(*s);
    }
    return wrong_type_error(key, "string", *v);
}

result<const metadata_array*> metadata::get_array(std::string_view key) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    if (const auto* a = v->as_array()) {
        return a;
    }
    return wrong_type_error(key, "array", *v);
}

template <class T>
result<std::span<const T>> metadata::get_typed_array(std::string_view key, value_type expected) const {
    SLUICE_GGUF_TRY(const auto* v, require(key));
    if (const auto* a = v->as_array()) {
        if (const auto* items = a->as<T>()) {
            return std::span<const T>(*items);
        }
    }
    return wrong_type_error(key, "array[" + std::string(to_string(expected)) + "]", *v);
}

result<std::span<const std::string>> metadata::get_array_of_strings(std::string_view key) const {
    return get_typed_array<std::string>(key, value_type::string);
}

result<std::span<const float>> metadata::get_array_of_f32(std::string_view key) const {
    return get_typed_array<float>(key, value_type::f32);
}

result<std::span<const std::int32_t>> metadata::get_array_of_i32(std::string_view key) const {
    return get_typed_array<std::int32_t>(key, value_type::i32);
}

result<std::optional<std::uint32_t>> metadata::find_u32(std::string_view key) const {
    if (!contains(key)) {
        return std::optional<std::uint32_t>();
    }
    SLUICE_GGUF_TRY(const auto v, get_u32(key));
    return std::optional<std::uint32_t>(v);
}

result<std::optional<std::string_view>> metadata::find_string(std::string_view key) const {
    if (!contains(key)) {
        return std::optional<std::string_view>();
    }
    SLUICE_GGUF_TRY(const auto v, get_string(key));
    return std::optional<std::string_view>(v);
}

} // namespace sluice::gguf
