// Unicode normalisation of tokenizer input: NFC (canonical decomposition, canonical ordering, canonical
// composition), as Hugging Face's "NFC" normalizer applies it before pre-tokenization.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::tokenizer {

/// The normalizer a vocabulary declares; applied to the text between special tokens before pre-tokenization.
enum class normalizer_kind : std::uint8_t {
    none, ///< text is tokenized as given
    nfc,  ///< Unicode Normalization Form C
};

/// The canonical combining class of `cp` (0 for starters, unassigned and out-of-range values). Thread-safe.
std::uint8_t combining_class(std::uint32_t cp) noexcept;

/// True when `text` is certainly in NFC: every character has NFC_Quick_Check=Yes and combining marks are in
/// canonical order. False means "may change": `to_nfc` decides. Thread-safe, allocates nothing.
bool is_nfc_quick(std::string_view text) noexcept;

/// Returns NFC(`text`). When `text` is already NFC (the common case: ASCII, most CJK and precomposed Latin)
/// the result is `text` itself and `scratch` is untouched; otherwise the result is written to `scratch` and
/// the returned view points into it (valid until `scratch` changes). Bytes that are not valid UTF-8 are
/// copied through unchanged and act as starters that compose with nothing. Thread-safe for distinct `scratch`.
std::string_view to_nfc(std::string_view text, std::string& scratch);

/// Returns NFC(`text`) as a new string (same rules as the two-argument overload).
std::string to_nfc(std::string_view text);

} // namespace sluice::tokenizer
