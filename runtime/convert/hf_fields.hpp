// Typed, checked access to config.json fields, shared by the config parsers of runtime/convert (internal).
#pragma once

#include "sluice/error.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::convert::detail {

namespace json = boost::json;

/// "config.json: field F: why" as invalid_argument.
inline error field_error(std::string_view field, std::string_view why) {
    return make_error(std::errc::invalid_argument,
                      "config.json: field " + std::string(field) + ": " + std::string(why));
}

/// "config.json: field F: why" as not_supported.
inline error unsupported(std::string_view field, std::string_view why) {
    return make_error(std::errc::not_supported, "config.json: field " + std::string(field) + ": " + std::string(why));
}

/// Typed, checked access to one config object; absent and null fields count as missing. `prefix` is prepended
/// to field names in errors (for nested objects such as "text_config.").
class fields {
public:
    explicit fields(const json::object& o, std::string prefix = {}) : o_(o), prefix_(std::move(prefix)) {}

    [[nodiscard]] const json::value* find(std::string_view key) const {
        const auto* v = o_.if_contains(key);
        return v == nullptr || v->is_null() ? nullptr : v;
    }

    /// The field's name as errors spell it.
    [[nodiscard]] std::string name(std::string_view key) const { return prefix_ + std::string(key); }

    [[nodiscard]] result<std::uint32_t> u32(std::string_view key) const {
        const auto* v = find(key);
        if (v == nullptr) {
            return field_error(name(key), "missing");
        }
        const bool ok =
            (v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= std::numeric_limits<std::uint32_t>::max()) ||
            (v->is_uint64() && v->get_uint64() <= std::numeric_limits<std::uint32_t>::max());
        if (!ok) {
            return field_error(name(key), "expected an unsigned 32-bit integer, found " + json::serialize(*v));
        }
        return static_cast<std::uint32_t>(v->is_int64() ? v->get_int64() : static_cast<std::int64_t>(v->get_uint64()));
    }

    /// `key`, or `other` when only `other` is present (a field transformers 5 renamed).
    [[nodiscard]] std::string_view either(std::string_view key, std::string_view other) const {
        return find(key) == nullptr && find(other) != nullptr ? other : key;
    }

    [[nodiscard]] result<std::uint32_t> u32_or(std::string_view key, std::uint32_t fallback) const {
        return find(key) ? u32(key) : result<std::uint32_t>(fallback);
    }

    [[nodiscard]] result<double> number_or(std::string_view key, double fallback) const {
        const auto* v = find(key);
        if (v == nullptr) {
            return fallback;
        }
        if (!v->is_number()) {
            return field_error(name(key), "expected a number, found " + json::serialize(*v));
        }
        return v->to_number<double>();
    }

    [[nodiscard]] result<std::optional<bool>> boolean(std::string_view key) const {
        const auto* v = find(key);
        if (v == nullptr) {
            return std::optional<bool>{};
        }
        if (!v->is_bool()) {
            return field_error(name(key), "expected true or false, found " + json::serialize(*v));
        }
        return std::optional<bool>{v->get_bool()};
    }

    /// A string field, or `fallback` when absent.
    [[nodiscard]] result<std::string> string_or(std::string_view key, std::string_view fallback) const {
        const auto* v = find(key);
        if (v == nullptr) {
            return std::string(fallback);
        }
        if (!v->is_string()) {
            return field_error(name(key), "expected a string, found " + json::serialize(*v));
        }
        return std::string(v->get_string());
    }

private:
    const json::object& o_;
    std::string prefix_;
};

} // namespace sluice::convert::detail

#define SLUICE_CONFIG_TRY(target, expr)                                                                                \
    do {                                                                                                               \
        auto try_value_ = (expr);                                                                                      \
        if (!try_value_) {                                                                                             \
            return std::move(try_value_).error();                                                                      \
        }                                                                                                              \
        target = *try_value_;                                                                                          \
    } while (false)
