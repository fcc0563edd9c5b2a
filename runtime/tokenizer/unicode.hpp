// Unicode helpers for the tokenizers: UTF-8 decoding and the character classes the pre-tokenizers split on.
#pragma once

#include "runtime/tokenizer/unicode_tables.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::tokenizer {

/// Bit flags describing one code point, as the pre-tokenizer patterns see it.
namespace cp_flag {
inline constexpr std::uint8_t letter = 1;  ///< \p{L}
inline constexpr std::uint8_t number = 2;  ///< \p{N}
inline constexpr std::uint8_t mark = 4;    ///< \p{M}
inline constexpr std::uint8_t punct = 8;   ///< \p{P}
inline constexpr std::uint8_t symbol = 16; ///< \p{S}
inline constexpr std::uint8_t space = 32;  ///< \s (Unicode White_Space)
inline constexpr std::uint8_t upper = 64;  ///< \p{Lu} or \p{Lt}
inline constexpr std::uint8_t lower = 128; ///< \p{Ll}
} // namespace cp_flag

/// The general category of `cp` (Cn for unassigned or out-of-range values). Thread-safe.
general_category category_of(std::uint32_t cp) noexcept;

/// The `cp_flag` bits of `cp`. Thread-safe; ASCII is answered from a small table.
std::uint8_t flags_of(std::uint32_t cp) noexcept;

/// Decodes one UTF-8 sequence at `s[pos]`; returns the code point and sets `len` to its byte length.
/// An invalid or truncated sequence decodes as U+FFFD with `len` 1, so every byte is consumed once.
std::uint32_t decode_utf8(std::string_view s, std::size_t pos, std::size_t& len) noexcept;

/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, std::uint32_t cp);

/// `s` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD (what JSON encoders and
/// terminals need; model output may be any bytes).
std::string valid_utf8(std::string_view s);

/// Length of the complete-or-not UTF-8 sequence that starts with `lead` (1 for stray bytes).
std::size_t utf8_sequence_length(unsigned char lead) noexcept;

} // namespace sluice::tokenizer
