// The GPT-2 byte-to-character mapping that byte-level BPE vocabularies store their tokens in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::tokenizer {

/// The code point that byte `b` is written as in a byte-level vocabulary (printable bytes map to
/// themselves, the others to U+0100 and up).
std::uint32_t byte_to_code_point(std::uint8_t b) noexcept;

/// Appends the byte-level form of `bytes` to `out`.
void append_byte_level(std::string& out, std::string_view bytes);

/// Decodes a byte-level token text back to raw bytes; nullopt if it holds a character outside the map.
std::optional<std::string> decode_byte_level(std::string_view text);

} // namespace sluice::tokenizer
