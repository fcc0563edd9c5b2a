// Encoding GGUF headers: metadata values and tensor infos to bytes (the inverse of parser.hpp).
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "runtime/gguf/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::gguf {

/// Appends the GGUF encoding of `value` (without its type id) to `out`.
void encode_value(std::vector<std::byte>& out, const metadata_value& value);

/// Encodes a version 3 header: magic, counts, every metadata entry, then the tensor infos with their
/// `offset` fields taken as relative to the data section. The result is padded with zeros to a multiple of
/// `alignment`, so tensor data can follow directly. `alignment` must be a power of two; the caller keeps
/// `general.alignment` in `kv` consistent with it.
std::vector<std::byte> encode_header(const metadata& kv, std::span<const tensor_info> tensors, std::uint32_t alignment);

} // namespace sluice::gguf
