// The grammar matcher: a pushdown recognizer over UTF-8 bytes whose states are interned, so a state is an
// integer, copying or rolling back is assigning one, and each (state, byte) transition is computed once.
#pragma once

#include "runtime/grammar/grammar.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::grammar {

/// Runs one grammar over bytes. A state is the set of parse stacks the bytes so far allow (as llama.cpp's
/// grammar keeps them) plus an unfinished UTF-8 sequence. Stacks are persistent linked lists whose nodes are
/// hash-consed, and states are interned, so equal states have equal ids; `step` caches every transition in a
/// 256-entry table per state. Not thread-safe: one per generation.
///
/// Safety bounds: a state with more than `max_stacks` stacks (a very ambiguous grammar) or an expansion deeper
/// than `max_expansion_depth` counts as a dead end, so the byte that led there is refused.
class matcher {
public:
    using state_id = std::int32_t;
    static constexpr state_id dead = -1;
    static constexpr std::size_t max_stacks = 4096;
    static constexpr std::size_t max_expansion_depth = 2048;

    explicit matcher(std::shared_ptr<const grammar> g);

    /// The current state; pass it to restore() to roll back. Ids stay valid until compact() renumbers them.
    [[nodiscard]] state_id current() const noexcept { return current_; }
    void restore(state_id s) noexcept { current_ = s; }

    /// The state after `byte` from state `s`, or `dead`. Amortized O(1): a table lookup once computed.
    [[nodiscard]] state_id step(state_id s, std::uint8_t byte) {
        auto& table = states_[static_cast<std::size_t>(s)].next;
        if (table) {
            const state_id t = (*table)[byte];
            if (t != unknown) {
                return t;
            }
        }
        return compute_step(s, byte);
    }

    /// Advances the current state over `bytes`; on a refused byte returns false and leaves the state unchanged.
    bool accept(std::string_view bytes);

    /// Whether the bytes so far form a complete document of the grammar (no UTF-8 sequence left open).
    [[nodiscard]] bool is_complete(state_id s) const noexcept { return states_[static_cast<std::size_t>(s)].complete; }
    [[nodiscard]] bool is_complete() const noexcept { return is_complete(current_); }
    /// Whether any byte may follow in state `s` (false: complete and nothing else possible).
    [[nodiscard]] bool can_continue(state_id s) const noexcept {
        const auto& st = states_[static_cast<std::size_t>(s)];
        return st.need > 0 || st.stacks.size() > (st.complete ? 1U : 0U);
    }

    /// Whether every code point of [lo, hi] (surrogates aside) leads from state `s` back to `s` (false for a state
    /// inside a UTF-8 sequence). Checks one code point per run of code points the top classes treat alike.
    bool returns_on_all(state_id s, std::uint32_t lo, std::uint32_t hi);

    /// For a state inside a UTF-8 sequence, the state with the same stacks at the sequence's start; else `s`.
    state_id sequence_start(state_id s);

    /// Interned states and stack nodes so far (memory grows with distinct states seen).
    [[nodiscard]] std::size_t state_count() const noexcept { return states_.size(); }
    [[nodiscard]] std::size_t node_count() const noexcept { return nodes_.size(); }

    /// Drops every state and node except those of the current state (which gets a new id), when more than
    /// `max_nodes` nodes or `max_states` states are held. Returns whether it did; every other id is then invalid.
    bool compact(std::size_t max_nodes = 1 << 21, std::size_t max_states = 1 << 16);

    [[nodiscard]] const grammar& rules() const noexcept { return *g_; }

private:
    static constexpr state_id unknown = -2;

public:
    /// The byte no UTF-8 text holds that starts a control token's byte form: token_lead, then the id in 3 bytes
    /// big-endian, read as the code point token_code_base + id (token_trie writes control tokens so).
    static constexpr std::uint8_t token_lead = 0xFF;

private:
    using node_id = std::uint32_t; ///< 0: the bottom of a stack (in a stack list: an empty, completed stack)

    struct node {
        std::uint32_t pos;  ///< the element to match next
        node_id parent;     ///< where to continue after this rule's alternative ends
    };
    struct state {
        std::vector<node_id> stacks; ///< sorted top nodes; 0 stands for a completed stack
        std::uint32_t partial = 0;   ///< bits of an unfinished UTF-8 sequence
        std::uint8_t need = 0;       ///< continuation bytes still expected
        std::uint8_t length = 0;     ///< the sequence's total length
        bool complete = false;
        std::unique_ptr<std::array<state_id, 256>> next;
    };

    state_id compute_step(state_id s, std::uint8_t byte);
    state_id advance(const std::vector<node_id>& stacks, std::uint32_t cp);
    state_id open_sequence(state_id s, std::uint32_t partial, std::uint8_t need, std::uint8_t length);
    bool expand(std::uint32_t pos, node_id parent, std::vector<node_id>& out, std::size_t depth);
    node_id intern_node(std::uint32_t pos, node_id parent);
    state_id open_token(state_id s);
    state_id intern_state(std::vector<node_id> stacks, std::uint32_t partial, std::uint8_t need, std::uint8_t length);
    node_id copy_chain(node_id n, const std::vector<node>& old_nodes, std::unordered_map<node_id, node_id>& map);

    std::shared_ptr<const grammar> g_;
    std::vector<node> nodes_;
    std::unordered_map<std::uint64_t, node_id> node_index_;
    std::vector<state> states_;
    std::unordered_map<std::string, state_id> state_index_;
    state_id current_ = dead;
};

} // namespace sluice::grammar
