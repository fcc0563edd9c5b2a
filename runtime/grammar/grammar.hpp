// A context-free grammar in the form the matcher runs: rules of alternatives, each a sequence of terminals
// (character classes over Unicode code points) and rule references, flattened into one element array.
#pragma once

#include "sluice/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::grammar {

/// Code points from `token_code_base` up stand for control tokens: token id t is token_code_base + t, written
/// `<[t]>` in GBNF. No text encodes them (the matcher reads them only as the trie's byte form of a control token,
/// see token_trie), and only a class written as `<[t]>` holds one: negated classes and `.` never do.
constexpr std::uint32_t token_code_base = 0x110000;
/// The largest token id `<[t]>` may name (the trie's byte form carries 24 bits).
constexpr std::uint32_t max_token_ref = 0xFFFFFF;

/// What one element of an alternative is.
enum class element_kind : std::uint8_t {
    end,   ///< the end of an alternative
    chars, ///< one code point of a character class (`value` indexes grammar::classes)
    rule,  ///< a reference to rule `value`
};

struct element {
    element_kind kind = element_kind::end;
    std::uint32_t value = 0;
};

/// A set of code points: sorted, disjoint, non-adjacent inclusive ranges, possibly negated.
struct char_class {
    bool negated = false;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
    std::array<std::uint64_t, 2> ascii{}; ///< membership of code points 0..127, negation applied

    /// Whether code point `cp` is in the set.
    [[nodiscard]] bool matches(std::uint32_t cp) const noexcept {
        if (cp < 128) {
            return ((ascii[cp >> 6] >> (cp & 63)) & 1U) != 0;
        }
        return matches_slow(cp);
    }
    /// Whether some code point of [lo, hi] is in the set.
    [[nodiscard]] bool matches_any(std::uint32_t lo, std::uint32_t hi) const noexcept;
    /// Sorts and merges the ranges and fills `ascii`.
    void finish();

private:
    [[nodiscard]] bool matches_slow(std::uint32_t cp) const noexcept;
};

/// A parsed grammar. Immutable; share it between matchers by shared_ptr.
/// Invariants the parser guarantees: every rule reference resolves, no rule is left-recursive (a rule can
/// not reach itself without consuming a code point), and every alternative ends with an `end` element.
struct grammar {
    std::vector<element> elements;
    std::vector<std::vector<std::uint32_t>> rules; ///< per rule: the index in `elements` where each alternative starts
    std::vector<std::string> rule_names;
    std::vector<char_class> classes;
    std::uint32_t root = 0;
};

/// Bounds that keep hostile grammar text from exhausting memory or the stack.
struct grammar_limits {
    std::size_t max_text_bytes = 1 << 20;  ///< the grammar text
    std::size_t max_nesting = 64;          ///< parentheses inside one another
    std::size_t max_rules = 20000;         ///< rules, the ones repetitions and groups create included
    std::size_t max_elements = 1 << 20;    ///< elements after repetitions are expanded
    std::uint32_t max_repetition = 4096;   ///< the bounds of `{m,n}`
};

/// Parses llama.cpp's GBNF: `name ::= alternatives` rules (a newline ends a rule unless the next line starts
/// with `|`), `root` as the start, `|`, sequences, parentheses, "string" literals and [character classes]
/// (with \n \r \t \\ \" \] \- \xHH \uHHHH \UHHHHHHHH escapes, `^` negation, `a-z` ranges), `.` for any code
/// point, `<[id]>` for the control token `id` (only that token; see token_code_base), `*` `+` `?` `{m}` `{m,}` `{m,n}` repetitions and `#` comments. Errors (std::errc::invalid_argument)
/// name the line and column ("line 3, column 14: expected ::= after the rule name"), or the rule for
/// grammar-wide faults (undefined rules, left recursion, no root).
[[nodiscard]] result<std::shared_ptr<const grammar>> parse_gbnf(std::string_view text,
                                                                const grammar_limits& limits = {});

} // namespace sluice::grammar
