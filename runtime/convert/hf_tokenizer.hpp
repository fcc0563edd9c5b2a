// Writing a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) as GGUF tokenizer.ggml.* metadata.
#pragma once

#include "runtime/gguf/metadata.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <filesystem>

namespace sluice::convert {

/// Reads `dir`/tokenizer.json (required), `dir`/tokenizer_config.json, `dir`/chat_template.jinja and
/// `dir`/config.json (special ids the tokenizer config lacks) when present, and sets in `kv` what llama.cpp's
/// converter writes: tokenizer.ggml.model ("gpt2" for byte-level BPE, "llama" with scores for byte_fallback
/// BPE), .pre (the pre-tokenizer family), .tokens, .token_type, .merges (BPE), .scores (llama), special ids,
/// .add_bos_token/.add_eos_token, tokenizer.chat_template. Pads to `n_vocab` tokens with "[PAD{i}]" (type
/// unused); 0 means no padding. Errors: a tokenizer larger than `n_vocab`, components the runtime tokenizer does
/// not support, or a normalizer/merge rule GGUF cannot record for the detected family; messages name the file.
result<void> write_hf_tokenizer(const std::filesystem::path& dir, std::uint32_t n_vocab, gguf::metadata& kv);

} // namespace sluice::convert
