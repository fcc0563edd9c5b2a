// Which tokens may come next under a grammar: the vocabulary as a byte trie walked against the matcher, and
// the per-generation filter the session samples through.
#pragma once

#include "runtime/grammar/matcher.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::tokenizer {
class tokenizer;
}

namespace sluice::grammar {

/// The vocabulary as byte strings (a byte-level BPE token's real bytes, not its stored text) in a trie laid out
/// in depth-first order, so a walk is one pass over an array that skips whole subtrees. A control token is there
/// as matcher::token_lead and its id (3 bytes), which only a grammar's `<[id]>` accepts, so a grammar may ask for
/// a format's marker token exactly where it names it. Tokens without bytes are left out; end-of-generation
/// tokens are listed apart. Immutable; share it across requests.
class token_trie {
public:
    /// Builds the trie of `vocab`; `n_vocab` is the model's logits width (at least the vocabulary's size).
    token_trie(const tokenizer::tokenizer& vocab, std::size_t n_vocab);

    struct node {
        std::uint32_t skip;        ///< index of the next node outside this one's subtree
        std::uint32_t tok_begin;   ///< tokens ending here: tokens_[tok_begin, tok_end)
        std::uint32_t tok_end;
        std::uint32_t subtree_end; ///< tokens ending in this subtree: tokens_[tok_begin, subtree_end)
        std::uint16_t depth;       ///< 1 for a first byte
        std::uint8_t byte;
        bool plain_below;          ///< every byte below this node is plain (see is_plain_byte)
        bool text_below;           ///< the path is well-formed UTF-8 so far and every byte below continues it
                                   ///< with plain bytes or well-formed sequences for code points from U+0080 up
    };

    /// Printable ASCII but `"` and `\`: the bytes ordinary JSON string content loops on.
    static constexpr bool is_plain_byte(std::uint8_t b) noexcept {
        return b >= 0x20 && b < 0x7F && b != '"' && b != '\\';
    }

    [[nodiscard]] std::size_t n_vocab() const noexcept { return n_vocab_; }
    [[nodiscard]] std::span<const node> nodes() const noexcept { return nodes_; }
    [[nodiscard]] std::span<const std::int32_t> tokens() const noexcept { return tokens_; }
    [[nodiscard]] std::span<const std::int32_t> end_of_generation() const noexcept { return eog_; }
    [[nodiscard]] bool is_end_of_generation(std::int32_t id) const noexcept;
    /// The bytes of token `id` (a control token's: token_lead and its id); empty for end-of-generation tokens
    /// and ids outside the vocabulary.
    [[nodiscard]] std::string_view bytes(std::int32_t id) const noexcept;
    [[nodiscard]] std::size_t max_depth() const noexcept { return max_depth_; }

private:
    void mark_text_subtrees();

    std::size_t n_vocab_;
    std::vector<node> nodes_;
    std::vector<std::int32_t> tokens_;
    std::vector<std::int32_t> eog_;
    std::vector<char> blob_;
    std::vector<std::uint32_t> offsets_; ///< bytes of token i: blob_[offsets_[i], offsets_[i + 1])
    std::size_t max_depth_ = 0;
};

/// Checks that every `<[id]>` of `g` names a control token `trie` holds (one a grammar can emit). Errors
/// (std::errc::invalid_argument): "<[9999]> names token 9999, outside this model's 4096 tokens", or a token that
/// is text or end-of-generation, which such a grammar could never produce.
result<void> check_token_refs(const grammar& g, const token_trie& trie);

/// A bit per token id.
struct token_mask {
    std::vector<std::uint64_t> bits;
    bool any_text = false; ///< some token other than end-of-generation is allowed

    [[nodiscard]] bool allows(std::int32_t id) const noexcept {
        const auto i = static_cast<std::size_t>(id);
        return id >= 0 && (i >> 6) < bits.size() && ((bits[i >> 6] >> (i & 63)) & 1U) != 0;
    }

    /// Writes `logits` to `out` with every disallowed token at -inf (64 tokens a word); returns the lowest
    /// allowed id, -1 when none is.
    std::int32_t apply(std::span<const float> logits, std::span<float> out) const noexcept;
};

/// One generation's grammar constraint: the matcher, the trie and a cache of masks by matcher state (the state
/// inside a JSON string repeats token after token, so most masks are a lookup). Not thread-safe.
class token_filter {
public:
    token_filter(std::shared_ptr<const grammar> g, std::shared_ptr<const token_trie> trie);

    /// The tokens allowed next: those whose bytes the grammar accepts from the current state, plus the
    /// end-of-generation tokens once the grammar is complete. The reference stays valid until accept().
    const token_mask& allowed();

    /// Advances over token `id`'s bytes. False (state unchanged) when the grammar refuses them.
    bool accept(std::int32_t id);

    /// Whether the text so far is a complete document.
    [[nodiscard]] bool is_complete() const noexcept { return matcher_.is_complete(); }
    /// Complete, and no token but end-of-generation can follow.
    bool only_end_remains();

    [[nodiscard]] const matcher& state() const noexcept { return matcher_; }

private:
    void compute(matcher::state_id s, token_mask& out);
    bool loops_on_plain(matcher::state_id s);
    bool loops_on_text(matcher::state_id s);
    bool subtree_allowed(matcher::state_id s, bool plain);
    std::int32_t plain_run(matcher::state_id s);
    void allow_by_depth(std::size_t i, std::int32_t run, token_mask& out);

    matcher matcher_;
    std::shared_ptr<const token_trie> trie_;
    std::unordered_map<matcher::state_id, token_mask> cache_;
    std::vector<matcher::state_id> walk_; ///< the matcher state at each depth of the trie walk
    std::vector<std::int8_t> plain_loop_; ///< per state: -1 unknown, 1 when every plain byte leads back to it
    std::vector<std::int8_t> text_loop_;  ///< per state: -1 unknown, 1 when every code point from U+0080 does too
    std::vector<std::int32_t> plain_run_; ///< per state: see plain_run(); -3 unknown
};

} // namespace sluice::grammar
