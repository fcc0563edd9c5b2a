// GGUF metadata values as JSON.
#include "runtime/gguf/value_json.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cmath>
#include <type_traits>

namespace sluice::gguf {
namespace {

template <class T>
boost::json::value item_json(const T& v, std::size_t max_items) {
    if constexpr (std::is_same_v<T, metadata_array>) {
        return to_json(metadata_value{value_storage(std::in_place_type<metadata_array>, v)}, max_items);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!std::isfinite(v)) {
            return boost::json::value(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        }
        return boost::json::value(static_cast<double>(v));
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
        return boost::json::value(v);
    } else if constexpr (std::is_signed_v<T>) {
        return boost::json::value(static_cast<std::int64_t>(v));
    } else {
        return boost::json::value(static_cast<std::uint64_t>(v));
    }
}

} // namespace

boost::json::value to_json(const metadata_value& value, std::size_t max_items) {
    const auto* arr = value.as_array();
    if (arr == nullptr) {
        return std::visit(
            [&](const auto& v) -> boost::json::value {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, metadata_array>) {
                    return nullptr; // unreachable: arrays handled below
                } else {
                    return item_json<T>(v, max_items);
                }
            },
            value.data);
    }
    boost::json::array items;
    std::visit(
        [&](const auto& vec) {
            using T = typename std::decay_t<decltype(vec)>::value_type;
            for (std::size_t i = 0; i < vec.size() && (max_items == 0 || i < max_items); ++i) {
                items.push_back(item_json<T>(vec[i], max_items));
            }
        },
        arr->items);
    if (max_items == 0 || arr->size() <= max_items) {
        return items;
    }
    boost::json::object truncated;
    truncated["type"] = type_name(value);
    truncated["count"] = arr->size();
    truncated["head"] = std::move(items);
    return truncated;
}

boost::json::object to_json(const metadata& kv, std::size_t max_items) {
    boost::json::object out;
    for (const auto& e : kv.entries()) {
        out[e.key] = to_json(e.value, max_items);
    }
    return out;
}

} // namespace sluice::gguf
