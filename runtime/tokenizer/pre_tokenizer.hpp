// Pre-tokenizers: split text into the pieces a BPE model encodes independently, one hand-written matcher
// per Hugging Face split pattern (no regular-expression engine).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice::tokenizer {

/// The split rules of one model family (GGUF `tokenizer.ggml.pre`).
enum class pre_tokenizer_kind {
    none,           ///< whole text is one piece (SentencePiece)
    gpt2,           ///< GPT-2, MPT, GPT-NeoX: 's|'t|...| ?\p{L}+| ?\p{N}+|...
    llama3,         ///< Llama 3: case-insensitive contractions, \p{N}{1,3}
    qwen2,          ///< Qwen 2/2.5/3: like llama3 with single digits
    deepseek_llm,   ///< DeepSeek LLM: newline, cased-letter, punctuation, CJK and digit splits
    deepseek_coder, ///< DeepSeek Coder: newline, letter, punctuation, CJK and digit splits
    deepseek_v3,    ///< DeepSeek V3/R1: \p{N}{1,3}, CJK/kana, then a letter+mark pattern
    starcoder,      ///< StarCoder: single digits, then the GPT-2 pattern
    gpt_oss,        ///< gpt-oss (o200k): case-aware letter runs with contractions
    qwen35,         ///< Qwen 3.5 / 3.6: like qwen2, with combining marks (\p{M}) joining letter runs
    kimi_k2,        ///< Kimi-K2 (tiktoken): Han runs first, then o200k's letter runs without Han
};

/// Maps a GGUF `tokenizer.ggml.pre` value to a kind; nullopt when the name is not supported.
std::optional<pre_tokenizer_kind> pre_tokenizer_from_name(std::string_view name);

/// A piece of the input: byte offsets [begin, end).
struct text_span {
    std::uint32_t begin;
    std::uint32_t end;
};

/// Splits `text` into pieces that cover it in order without gaps. Invalid UTF-8 bytes are kept (each is
/// classified as U+FFFD). `out` is cleared first. Thread-safe.
void pre_tokenize(pre_tokenizer_kind kind, std::string_view text, std::vector<text_span>& out);

} // namespace sluice::tokenizer
