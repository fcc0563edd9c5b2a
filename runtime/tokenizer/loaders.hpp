// Loading a tokenizer vocabulary from a GGUF file's metadata or from a Hugging Face tokenizer.json.
#pragma once

#include "runtime/tokenizer/tokenizer.hpp"
#include "runtime/tokenizer/vocab.hpp"
#include "sluice/error.hpp"

#include <filesystem>
#include <string_view>

namespace sluice::gguf {
class metadata;
}

namespace sluice::tokenizer {

/// Builds a vocabulary from GGUF `tokenizer.ggml.*` metadata (model, pre, tokens, scores, token_type,
/// merges, special ids, add_bos/add_eos/add_space_prefix, chat template). Errors name the key.
result<vocab> vocab_from_gguf(const gguf::metadata& kv);

/// Builds a vocabulary from the text of a tokenizer.json and (may be empty) tokenizer_config.json.
/// Supports byte-level BPE models with the pre-tokenizers of `pre_tokenizer_kind`, and BPE models with
/// byte_fallback in the Llama 2 / Mistral shape (Prepend/Replace normalizer, no pre-tokenizer), which load as
/// `model_kind::spm` with `rank_merges`. Other components are errors that name them.
result<vocab> vocab_from_hf_json(std::string_view tokenizer_json, std::string_view config_json);

/// Builds a byte-level BPE vocabulary from a tiktoken.model ("base64(bytes) rank" lines) and (may be empty)
/// tokenizer_config.json (added_tokens_decoder, bos/eos/pad/unk names, chat_template), as Kimi-K2 ships its
/// tokenizer: tokens in rank order, merges derived from the ranks, the kimi-k2 pre-tokenizer. Errors name the
/// file and line.
result<vocab> vocab_from_tiktoken(std::string_view model_text, std::string_view config_json);

/// Loads a tokenizer from `path`: a GGUF file (by its magic) or a tokenizer.json, in which case a
/// tokenizer_config.json in the same folder is read too when present. Errors name the path.
result<tokenizer> load_tokenizer(const std::filesystem::path& path);

} // namespace sluice::tokenizer
