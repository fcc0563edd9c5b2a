// The tokenizer half of a generated model: `tokenizer.*` metadata synthesised, copied from another GGUF file
// or converted from a Hugging Face tokenizer folder.
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <filesystem>

namespace sluice::mkmodel {

/// Fewest tokens the synthetic vocabulary needs: 256 byte tokens and 3 control tokens.
inline constexpr std::uint32_t min_synthetic_vocab = 259;

/// A byte-level BPE vocabulary (`gpt2` model, `gpt-2` pre-tokenizer) of exactly `n_vocab` tokens: the 256
/// byte tokens, merged tokens of letter pairs and space-led triples (with their merges) while room is left,
/// <|endoftext|> (BOS, EOS and padding), <|im_start|>, <|im_end|>, a ChatML template, then [PADn] filler.
/// Any text round-trips through it. Error when `n_vocab` < min_synthetic_vocab.
result<gguf::metadata> synthetic_tokenizer(std::uint32_t n_vocab);

/// Every `tokenizer.*` key of the GGUF model at `path` (any part of a split model). Errors name the path.
result<gguf::metadata> tokenizer_from_gguf(const std::filesystem::path& path);

/// The keys llama.cpp's converter writes for the Hugging Face tokenizer in folder `dir` (tokenizer.json,
/// tokenizer_config.json), with the token list padded to `n_vocab`. Errors name the folder.
result<gguf::metadata> tokenizer_from_hf(const std::filesystem::path& dir, std::uint32_t n_vocab);

/// `tokenizer_from_gguf` for a file, `tokenizer_from_hf` for a folder holding tokenizer.json.
result<gguf::metadata> tokenizer_from(const std::filesystem::path& path, std::uint32_t n_vocab);

/// Number of entries of `tokenizer.ggml.tokens`.
result<std::uint32_t> token_count(const gguf::metadata& kv);

/// Checks the keys load into a working tokenizer, the way `sluice tokenize` loads a model.
result<void> check_tokenizer(const gguf::metadata& kv);

} // namespace sluice::mkmodel
