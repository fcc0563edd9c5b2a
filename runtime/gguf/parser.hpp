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

/// What a parse checks the header against. `whole_file`: every tensor's data must lie inside the file.
/// `header_only`: the file may be a prefix of the model (a partial download); only the header has to be whole,
/// the tensor table's offsets are taken as they are (still aligned and non-overlapping) and `file_size` is the
/// bytes present.
enum class header_mode { whole_file, header_only };

/// The error code of a file that ends inside its header (header_only mode); `is_cut_header` tells it apart.
inline constexpr std::errc cut_header_errc = std::errc::no_message_available;

/// Whether `e` says the file ends inside its GGUF header (the message names the part that is missing).
[[nodiscard]] inline bool is_cut_header(const error& e) noexcept {
    return e.code == std::make_error_code(cut_header_errc);
}

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
/// With `header_only`, a source that ends before the header does fails with `cut_header_errc` and a message
/// naming where it was cut and what is missing ("the file ends inside its GGUF header (4096 bytes): cut in the
/// key-values at entry #12 of 40 (tokenizer.ggml.tokens); missing: the rest of the key-values and the tensor
/// table of 579 tensors").
result<file_header> parse_header(byte_source& src, header_mode mode = header_mode::whole_file);

/// Parses a whole GGUF file held in memory (used by the fuzzer and tests).
result<file_header> parse_header(std::span<const std::byte> bytes);

} // namespace sluice::gguf
