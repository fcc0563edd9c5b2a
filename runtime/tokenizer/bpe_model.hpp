// Ranked-merge BPE: turns one pre-tokenized piece into token ids. Byte-level (GPT-2 style) for BPE
// vocabularies; over UTF-8 characters with <0xAB> byte fallback for SentencePiece vocabularies with ranked merges.
#pragma once

#include "runtime/tokenizer/vocab.hpp"
#include "sluice/error.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::tokenizer {

/// Immutable after construction; `encode_piece` is thread-safe.
class bpe_model {
public:
    /// Builds the merge table from `v`; `text_to_id` maps token text to id. A `model_kind::bpe` vocabulary must
    /// be byte-level; a `model_kind::spm` one starts from UTF-8 characters and falls back to <0xAB> tokens
    /// (then to `unk`, consecutive unknowns fused) for characters that are not tokens. Merges naming unknown
    /// tokens are skipped, as Hugging Face tokenizers do at load time.
    static result<bpe_model> build(const vocab& v, const std::unordered_map<std::string, token_id>& text_to_id);

    /// Appends the ids of raw `bytes` (one pre-tokenizer piece; for SentencePiece vocabularies the whole
    /// normalized text, spaces already replaced by U+2581) to `out`.
    void encode_piece(std::string_view bytes, std::vector<token_id>& out) const;

private:
    struct merge_entry {
        std::uint64_t key = ~std::uint64_t{0}; ///< (left << 32) | right; all ones when the slot is empty
        std::int32_t rank = 0;
        token_id result = 0;
    };

    const merge_entry* find_merge(token_id left, token_id right) const noexcept;
    void insert_merge(token_id left, token_id right, std::int32_t rank, token_id result);
    void merge_symbols(std::vector<token_id>& symbols) const;
    void split_characters(std::string_view text, std::vector<token_id>& symbols) const;

    std::array<token_id, 256> byte_token_{};
    std::vector<merge_entry> table_; ///< open addressing, power-of-two size
    std::uint64_t mask_ = 0;
    bool ignore_merges_ = false;
    bool characters_ = false; ///< symbols start as UTF-8 characters with byte fallback, not as bytes
    std::optional<token_id> unk_;
    const std::unordered_map<std::string, token_id>* text_to_id_ = nullptr;
};

} // namespace sluice::tokenizer
