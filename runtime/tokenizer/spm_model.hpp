// SentencePiece (llama/mistral style): score-ordered merges of UTF-8 characters with byte fallback.
#pragma once

#include "runtime/tokenizer/vocab.hpp"
#include "sluice/error.hpp"

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::tokenizer {

/// Immutable after construction; `encode_text` is thread-safe.
class spm_model {
public:
    /// Reads scores and byte tokens from `v`; fails when scores are missing.
    static result<spm_model> build(const vocab& v, const std::unordered_map<std::string, token_id>& text_to_id);

    /// Appends the ids of `text` (spaces already replaced by U+2581) to `out`.
    void encode_text(std::string_view text, std::vector<token_id>& out) const;

private:
    struct symbol {
        std::uint32_t begin;
        std::uint32_t len;
        std::int32_t prev;
        std::int32_t next;
    };

    std::optional<token_id> find(std::string_view text) const;
    void emit(std::string_view text, std::vector<token_id>& out) const;

    std::array<token_id, 256> byte_token_{}; ///< <0xAB> tokens, -1 when absent
    std::vector<float> scores_;
    std::optional<token_id> unk_;
    const std::unordered_map<std::string, token_id>* text_to_id_ = nullptr;
};

} // namespace sluice::tokenizer
