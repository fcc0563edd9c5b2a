// The tokenizer: text to token ids and back, for byte-level BPE and SentencePiece vocabularies, with
// special-token handling and the set of end-of-generation tokens.
#pragma once

#include "runtime/tokenizer/vocab.hpp"
#include "sluice/error.hpp"

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::tokenizer {

/// How `tokenizer::encode` treats its input.
struct encode_options {
    bool add_special = false; ///< add BOS/EOS as the vocabulary's add_bos/add_eos say
    /// Match control-token text ("<|im_end|>") in the input as one token. User-defined (added, non-special)
    /// tokens are always matched, as Hugging Face and llama.cpp do.
    bool parse_special = true;
    /// Sorted, disjoint byte ranges [first, second) of the text where control-token text is not matched even
    /// with parse_special: what a user wrote inside a chat prompt (chat::render_chat_guarded finds them).
    std::span<const std::pair<std::size_t, std::size_t>> literal_spans;
};

/// How `tokenizer::decode` renders tokens.
struct decode_options {
    bool skip_special = false;      ///< drop control tokens (BOS, <|im_end|>) instead of printing their text
    bool strip_space_prefix = true; ///< SentencePiece: drop the space the encoder put before the text
};

/// A loaded tokenizer. Immutable after creation: every const member is thread-safe. Cheap to move.
class tokenizer {
public:
    /// Builds a tokenizer from a vocabulary description. Errors: inconsistent sizes, a byte-level vocabulary
    /// without a token for some byte, SentencePiece without scores.
    static result<tokenizer> create(vocab v);

    /// Encodes UTF-8 `text` (invalid bytes are encoded as bytes) and returns the ids. The vocabulary's
    /// normalizer (NFC for Qwen) is applied to each piece of text between special tokens, as Hugging Face does.
    [[nodiscard]] std::vector<token_id> encode(std::string_view text, const encode_options& opts = {}) const;

    /// Appends the ids of `text` to `out`.
    void encode(std::string_view text, const encode_options& opts, std::vector<token_id>& out) const;

    /// Concatenates the pieces of `ids`; ids out of range are skipped.
    [[nodiscard]] std::string decode(std::span<const token_id> ids, const decode_options& opts = {}) const;

    /// The raw bytes token `id` stands for (may be an incomplete UTF-8 sequence). Control tokens give their
    /// text unless `skip_special`. Empty for ids out of range.
    [[nodiscard]] std::string_view piece(token_id id, bool skip_special = false) const;

    /// The token's text as stored in the vocabulary ("Ġthe", "▁the", "<|im_end|>").
    [[nodiscard]] const std::string& token_text(token_id id) const;

    /// The id of the token whose stored text is `text`, if any.
    [[nodiscard]] std::optional<token_id> find(std::string_view text) const;

    /// True for tokens that end generation (EOS, EOT, EOM, <|im_end|>, <|endoftext|>, <|eot_id|>, ...).
    [[nodiscard]] bool is_end_of_generation(token_id id) const;

    /// All end-of-generation ids, sorted.
    [[nodiscard]] std::span<const token_id> end_of_generation() const;

    /// True for control (special) tokens.
    [[nodiscard]] bool is_control(token_id id) const;

    /// The texts of all control tokens ("<|im_start|>", "<s>", ...), in id order.
    [[nodiscard]] const std::vector<std::string>& control_texts() const;

    /// Number of tokens.
    [[nodiscard]] std::size_t size() const;

    /// The vocabulary this tokenizer was built from.
    [[nodiscard]] const vocab& description() const;

    tokenizer(tokenizer&&) noexcept;
    tokenizer& operator=(tokenizer&&) noexcept;
    ~tokenizer();

private:
    struct state;
    explicit tokenizer(std::unique_ptr<state> s);
    void encode_text(std::string_view text, bool first_fragment, std::vector<token_id>& out) const;

    std::unique_ptr<state> state_;
};

} // namespace sluice::tokenizer
