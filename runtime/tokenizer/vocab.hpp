// The neutral description of a tokenizer vocabulary that every loader (GGUF, tokenizer.json) produces.
#pragma once

#include "runtime/tokenizer/normalize.hpp"
#include "runtime/tokenizer/pre_tokenizer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::tokenizer {

/// A token id; ids index `vocab::tokens`.
using token_id = std::int32_t;

/// Token attributes, numbered as GGUF `tokenizer.ggml.token_type` stores them.
enum class token_type : std::uint8_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,      ///< special token (BOS, EOS, <|im_end|>): matched in input, hidden by default in output
    user_defined = 4, ///< added token: matched in input, always shown in output
    unused = 5,
    byte = 6, ///< SentencePiece byte-fallback token <0xAB>
};

/// The tokenization algorithm.
enum class model_kind {
    bpe, ///< byte-level BPE (GPT-2 style): ranked merges over byte symbols
    spm, ///< SentencePiece (llama/mistral style): merges of UTF-8 characters with byte fallback, ordered by
         ///< score, or by `merges` rank when `rank_merges` (a tokenizer.json BPE model with byte_fallback)
};

/// Everything needed to build a tokenizer, independent of the file it came from.
struct vocab {
    model_kind model = model_kind::bpe;
    normalizer_kind normalizer = normalizer_kind::none; ///< applied to the text between special tokens
    pre_tokenizer_kind pre = pre_tokenizer_kind::gpt2;
    std::vector<std::string> tokens;                         ///< token text as the model stores it
    std::vector<float> scores;                               ///< SentencePiece scores (may be empty for BPE)
    std::vector<token_type> types;                           ///< empty means all normal
    std::vector<std::pair<std::string, std::string>> merges; ///< BPE merges, highest priority first
    std::optional<token_id> bos, eos, eot, eom, unk, pad;
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = true; ///< SentencePiece: prefix the text with a space
    bool ignore_merges = false;   ///< BPE: a piece that is itself a token is not merged
    bool rank_merges = false;     ///< SentencePiece: merge by `merges` rank (Hugging Face BPE), not by score
    std::string chat_template;
};

} // namespace sluice::tokenizer
