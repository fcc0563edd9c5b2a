// Encoding GGUF headers to bytes, little-endian, version 3.
#include "runtime/gguf/encode.hpp"

#include "runtime/gguf/parser.hpp"

#include <cstring>
#include <type_traits>

namespace sluice::gguf {
namespace {

template <class T>
void put(std::vector<std::byte>& out, T v) {
    const auto old = out.size();
    out.resize(old + sizeof(T));
    std::memcpy(out.data() + old, &v, sizeof(T));
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
    put<std::uint64_t>(out, s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
}

void put_array(std::vector<std::byte>& out, const metadata_array& arr);

template <class T>
void put_item(std::vector<std::byte>& out, const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        put<std::uint8_t>(out, v ? 1 : 0);
    } else if constexpr (std::is_same_v<T, std::string>) {
        put_string(out, v);
    } else if constexpr (std::is_same_v<T, metadata_array>) {
        put_array(out, v);
    } else {
        put<T>(out, v);
    }
}

void put_array(std::vector<std::byte>& out, const metadata_array& arr) {
    put<std::uint32_t>(out, static_cast<std::uint32_t>(arr.element_type()));
    put<std::uint64_t>(out, arr.size());
    std::visit(
        [&](const auto& items) {
            using T = typename std::decay_t<decltype(items)>::value_type;
            if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
                const auto* p = reinterpret_cast<const std::byte*>(items.data());
                out.insert(out.end(), p, p + items.size() * sizeof(T));
            } else {
                for (const auto& item : items) {
                    put_item<T>(out, item);
                }
            }
        },
        arr.items);
}

} // namespace

void encode_value(std::vector<std::byte>& out, const metadata_value& value) {
    if (const auto* arr = value.as_array()) {
        put_array(out, *arr);
        return;
    }
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (!std::is_same_v<T, metadata_array>) {
                put_item<T>(out, v);
            }
        },
        value.data);
}

std::vector<std::byte> encode_header(const metadata& kv, std::span<const tensor_info> tensors,
                                     std::uint32_t alignment) {
    std::vector<std::byte> out;
    put<std::uint32_t>(out, gguf_magic);
    put<std::uint32_t>(out, 3);
    put<std::uint64_t>(out, tensors.size());
    put<std::uint64_t>(out, kv.size());
    for (const auto& e : kv.entries()) {
        put_string(out, e.key);
        put<std::uint32_t>(out, static_cast<std::uint32_t>(e.value.type()));
        encode_value(out, e.value);
    }
    for (const auto& t : tensors) {
        put_string(out, t.name);
        put<std::uint32_t>(out, t.n_dims);
        for (std::uint32_t d = 0; d < t.n_dims; ++d) {
            put<std::uint64_t>(out, t.ne[d]);
        }
        put<std::uint32_t>(out, static_cast<std::uint32_t>(t.type));
        put<std::uint64_t>(out, t.offset);
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment);
    return out;
}

} // namespace sluice::gguf
