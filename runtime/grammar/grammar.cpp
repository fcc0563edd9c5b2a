// Character classes, and the grammar-wide checks run after parsing: nullable rules and left recursion.
#include "runtime/grammar/grammar_build.hpp"

#include <algorithm>

namespace sluice::grammar {

bool char_class::matches_slow(std::uint32_t cp) const noexcept {
    // The ranges are sorted and disjoint: find the last range starting at or before cp.
    auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                               [](std::uint32_t v, const auto& r) { return v < r.first; });
    const bool in = it != ranges.begin() && cp <= std::prev(it)->second;
    if (cp >= token_code_base) {
        return in && !negated; // a control token only where `<[id]>` names it
    }
    return in != negated;
}

bool char_class::matches_any(std::uint32_t lo, std::uint32_t hi) const noexcept {
    if (!negated) {
        return std::any_of(ranges.begin(), ranges.end(),
                           [&](const auto& r) { return r.first <= hi && lo <= r.second; });
    }
    // Merged ranges never touch, so [lo, hi] is excluded only when one range covers it whole. Negated classes
    // hold no control-token code points.
    if (lo >= token_code_base) {
        return false;
    }
    hi = std::min(hi, token_code_base - 1);
    return std::none_of(ranges.begin(), ranges.end(), [&](const auto& r) { return r.first <= lo && hi <= r.second; });
}

void char_class::finish() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
    for (const auto& r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second + 1) {
            merged.back().second = std::max(merged.back().second, r.second);
        } else {
            merged.push_back(r);
        }
    }
    ranges = std::move(merged);
    ascii = {};
    for (std::uint32_t cp = 0; cp < 128; ++cp) {
        if (matches_slow(cp)) {
            ascii[cp >> 6] |= std::uint64_t{1} << (cp & 63);
        }
    }
}

namespace {

/// Rules that can match the empty string (a fixpoint over the alternatives).
std::vector<bool> nullable_rules(const grammar& g) {
    std::vector<bool> nullable(g.rules.size(), false);
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t r = 0; r < g.rules.size(); ++r) {
            if (nullable[r]) {
                continue;
            }
            for (const auto start : g.rules[r]) {
                std::size_t i = start;
                while (g.elements[i].kind == element_kind::rule && nullable[g.elements[i].value]) {
                    ++i;
                }
                if (g.elements[i].kind == element_kind::end) {
                    nullable[r] = true;
                    changed = true;
                    break;
                }
            }
        }
    }
    return nullable;
}

/// For each rule, the rules it may start with before consuming anything.
std::vector<std::vector<std::uint32_t>> leading_rules(const grammar& g, const std::vector<bool>& nullable) {
    std::vector<std::vector<std::uint32_t>> out(g.rules.size());
    for (std::size_t r = 0; r < g.rules.size(); ++r) {
        for (const auto start : g.rules[r]) {
            for (std::size_t i = start; g.elements[i].kind == element_kind::rule; ++i) {
                out[r].push_back(g.elements[i].value);
                if (!nullable[g.elements[i].value]) {
                    break;
                }
            }
        }
    }
    return out;
}

} // namespace

result<void> check_left_recursion(const grammar& g) {
    const auto edges = leading_rules(g, nullable_rules(g));
    // Iterative depth-first search with three colours; a grey rule reached again closes a cycle.
    enum : std::uint8_t { white, grey, black };
    std::vector<std::uint8_t> colour(g.rules.size(), white);
    std::vector<std::pair<std::uint32_t, std::size_t>> stack;
    for (std::uint32_t start = 0; start < g.rules.size(); ++start) {
        if (colour[start] != white) {
            continue;
        }
        stack.emplace_back(start, 0);
        colour[start] = grey;
        while (!stack.empty()) {
            auto& [rule, next] = stack.back();
            if (next == edges[rule].size()) {
                colour[rule] = black;
                stack.pop_back();
                continue;
            }
            const auto to = edges[rule][next++];
            if (colour[to] == grey) {
                return make_error(std::errc::invalid_argument,
                                  "left recursion: rule '" + g.rule_names[to] +
                                      "' can reach itself without matching any text");
            }
            if (colour[to] == white) {
                colour[to] = grey;
                stack.emplace_back(to, 0);
            }
        }
    }
    return {};
}

} // namespace sluice::grammar
