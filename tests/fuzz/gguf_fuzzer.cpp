// libFuzzer target: parses arbitrary bytes as a GGUF header; on success checks that re-encoding round-trips.
#include "runtime/gguf/encode.hpp"
#include "runtime/gguf/parser.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sluice::gguf;
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    auto header = parse_header(bytes);
    if (!header) {
        return 0;
    }
    // Exercise the accessors and display paths on every entry and tensor.
    for (const auto& e : header->kv.entries()) {
        (void)to_display_string(e.value);
        (void)type_name(e.value);
        (void)header->kv.get_u32(e.key);
        (void)header->kv.get_array_of_strings(e.key);
    }
    std::vector<tensor_info> relative = header->tensors;
    for (auto& t : relative) {
        (void)t.expert_slab(t.expert_count() == 0 ? 0 : t.expert_count() - 1);
        (void)shape_string(t);
        if (t.offset < header->data_offset || t.offset + t.bytes > header->file_size) {
            std::abort(); // the parser let an out-of-file tensor through
        }
        t.offset -= header->data_offset;
    }
    if (header->alignment > (1U << 16)) {
        return 0; // legal, but re-encoding would pad to up to 2 GiB
    }
    // Round trip: re-encoding what was parsed and parsing it again must give the same metadata and tensors.
    auto encoded = encode_header(header->kv, relative, header->alignment);
    const std::uint64_t data_bytes = header->file_size - std::min(header->file_size, header->data_offset);
    encoded.resize(encoded.size() + (header->tensors.empty() ? 0 : data_bytes));
    auto again = parse_header(encoded);
    if (!again || again->tensors.size() != header->tensors.size()) {
        std::abort();
    }
    // Compare encodings rather than values: NaN metadata floats are legal and never compare equal.
    for (auto& t : again->tensors) {
        t.offset -= again->data_offset;
    }
    if (encode_header(again->kv, again->tensors, again->alignment) !=
        encode_header(header->kv, relative, header->alignment)) {
        std::abort();
    }
    return 0;
}
