// The GGUF header parser: magic, version, metadata and tensor infos, every length and offset checked.
// Free of Asio so the fuzzer can build it alone with clang.
#pragma once

#include "runtime/gguf/byte_source.hpp"
#include "runtime/gguf/metadata.hpp"
#include "runtime/gguf/tensor_info.hpp"
#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::gguf {

/// "GGUF" read as a little-endian u32.
inline constexpr std::uint32_t gguf_magic = 0x46554747;
/// Alignment of tensor data when `general.alignment` is absent.
inline constexpr std::uint32_t default_alignment = 32;
/// Deepest nesting of arrays of arrays the parser accepts (bounds recursion).
inline constexpr int max_array_depth = 16;
/// Longest metadata key in bytes (GGUF spec: keys are at most 2^16-1 bytes).
inline constexpr std::uint64_t max_key_bytes = 65535;

/// Everything before the tensor data of one GGUF file, validated against the file size.
struct file_header {
    std::uint32_t version = 3;
    std::uint32_t alignment = default_alignment;
    std::uint64_t data_offset = 0; ///< absolute offset of the (aligned) data section
    std::uint64_t file_size = 0;
    metadata kv;
    std::vector<tensor_info> tensors; ///< in file order, offsets absolute, split = 0
};

/// Parses a header from `src`, which must be positioned at the start of the file; `src.size()` is taken
/// as the file size. Reads only the header, never tensor data.
///
/// Errors (std::errc::bad_message for malformed input) name the field: "metadata key K: array count N
/// exceeds remaining bytes", "tensor blk.3.ffn_up_exps: data extends past end of file (offset X + Y bytes
/// > file size Z)", "unsupported type T in tensor NAME", "GGUF version 1 is not supported".
result<file_header> parse_header(byte_source& src);

/// Parses a whole GGUF file held in memory (used by the fuzzer and tests).
result<file_header> parse_header(std::span<const std::byte> bytes);

} // namespace sluice::gguf
