// matcher: interned parse-stack states, UTF-8 decoding byte by byte, and the cached transitions.
#include "runtime/grammar/matcher.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace sluice::grammar {

matcher::matcher(std::shared_ptr<const grammar> g) : g_(std::move(g)) {
    nodes_.push_back({0, 0}); // node 0: the bottom
    std::vector<node_id> stacks;
    bool ok = true;
    for (const auto start : g_->rules[g_->root]) {
        ok = ok && expand(start, 0, stacks, 0);
    }
    current_ = ok ? intern_state(std::move(stacks), 0, 0, 0) : dead;
}

matcher::node_id matcher::intern_node(std::uint32_t pos, node_id parent) {
    const std::uint64_t key = (std::uint64_t{pos} << 32) | parent;
    auto [it, added] = node_index_.emplace(key, static_cast<node_id>(nodes_.size()));
    if (added) {
        nodes_.push_back({pos, parent});
    }
    return it->second;
}

// Pushes the stacks that continue from element `pos` (under `parent`) with a terminal on top. A rule reference
// expands into its alternatives; an alternative's end returns to the parent. Returns false past the bounds.
bool matcher::expand(std::uint32_t pos, node_id parent, std::vector<node_id>& out, std::size_t depth) {
    if (depth > max_expansion_depth || out.size() > max_stacks) {
        return false;
    }
    for (;;) {
        const element e = g_->elements[pos];
        if (e.kind == element_kind::end) {
            if (parent == 0) {
                out.push_back(0);
                return true;
            }
            pos = nodes_[parent].pos;
            parent = nodes_[parent].parent;
            continue;
        }
        if (e.kind == element_kind::chars) {
            out.push_back(intern_node(pos, parent));
            return true;
        }
        // A reference in tail position continues straight to the parent, so right recursion stays flat.
        const node_id cont = g_->elements[pos + 1].kind == element_kind::end ? parent : intern_node(pos + 1, parent);
        for (const auto start : g_->rules[e.value]) {
            if (!expand(start, cont, out, depth + 1)) {
                return false;
            }
        }
        return true;
    }
}

matcher::state_id matcher::intern_state(std::vector<node_id> stacks, std::uint32_t partial, std::uint8_t need,
                                        std::uint8_t length) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.empty() || stacks.size() > max_stacks) {
        return dead;
    }
    std::string key(sizeof(node_id) * stacks.size() + 6, '\0');
    std::memcpy(key.data(), stacks.data(), sizeof(node_id) * stacks.size());
    std::memcpy(key.data() + sizeof(node_id) * stacks.size(), &partial, 4);
    key[key.size() - 2] = static_cast<char>(need);
    key[key.size() - 1] = static_cast<char>(length);
    auto [it, added] = state_index_.emplace(std::move(key), static_cast<state_id>(states_.size()));
    if (added) {
        state st;
        st.complete = need == 0 && stacks.front() == 0;
        st.stacks = std::move(stacks);
        st.partial = partial;
        st.need = need;
        st.length = length;
        states_.push_back(std::move(st));
    }
    return it->second;
}

matcher::state_id matcher::advance(const std::vector<node_id>& stacks, std::uint32_t cp) {
    std::vector<node_id> out;
    for (const auto top : stacks) {
        if (top == 0) {
            continue;
        }
        const node n = nodes_[top];
        if (g_->classes[g_->elements[n.pos].value].matches(cp) && !expand(n.pos + 1, n.parent, out, 0)) {
            return dead;
        }
    }
    return intern_state(std::move(out), 0, 0, 0);
}

// A state inside a multi-byte sequence, kept only when some stack's class holds a code point it can end as.
matcher::state_id matcher::open_sequence(state_id s, std::uint32_t partial, std::uint8_t need, std::uint8_t length) {
    static constexpr std::uint32_t min_of_length[5] = {0, 0, 0x80, 0x800, 0x10000};
    std::uint32_t lo = partial << (6U * need);
    std::uint32_t hi = lo | ((1U << (6U * need)) - 1U);
    lo = std::max(lo, min_of_length[length]);
    hi = std::min(hi, 0x10FFFFU);
    if (lo > hi) {
        return dead;
    }
    // Surrogates (U+D800..U+DFFF) are not code points UTF-8 may encode: the range is checked around them.
    const auto fits = [&](const char_class& c) {
        return (lo < 0xD800 && c.matches_any(lo, std::min(hi, 0xD7FFU))) ||
               (hi > 0xDFFF && c.matches_any(std::max(lo, 0xE000U), hi));
    };
    const auto& stacks = states_[static_cast<std::size_t>(s)].stacks;
    const bool viable = std::any_of(stacks.begin(), stacks.end(), [&](node_id top) {
        return top != 0 && fits(g_->classes[g_->elements[nodes_[top].pos].value]);
    });
    if (!viable) {
        return dead;
    }
    auto copy = stacks;
    return intern_state(std::move(copy), partial, need, length);
}

// After token_lead: kept only when some stack's top class names a control token.
matcher::state_id matcher::open_token(state_id s) {
    const auto& stacks = states_[static_cast<std::size_t>(s)].stacks;
    const bool viable = std::any_of(stacks.begin(), stacks.end(), [&](node_id top) {
        return top != 0 && g_->classes[g_->elements[nodes_[top].pos].value].matches_any(token_code_base,
                                                                                         token_code_base + max_token_ref);
    });
    if (!viable) {
        return dead;
    }
    auto copy = stacks;
    return intern_state(std::move(copy), 0, 3, 0);
}

matcher::state_id matcher::compute_step(state_id s, std::uint8_t b) {
    const state& st = states_[static_cast<std::size_t>(s)];
    state_id out = dead;
    if (st.need == 0) {
        if (b < 0x80) {
            out = advance(st.stacks, b);
        } else if (b >= 0xC2 && b <= 0xDF) {
            out = open_sequence(s, b & 0x1FU, 1, 2);
        } else if (b >= 0xE0 && b <= 0xEF) {
            out = open_sequence(s, b & 0x0FU, 2, 3);
        } else if (b >= 0xF0 && b <= 0xF4) {
            out = open_sequence(s, b & 0x07U, 3, 4);
        } else if (b == token_lead) {
            out = open_token(s);
        }
    } else if (st.length == 0) {
        // A control token's id, 3 bytes big-endian after token_lead (length 0 marks this kind of sequence).
        const std::uint32_t v = (st.partial << 8) | b;
        const auto need = static_cast<std::uint8_t>(st.need - 1);
        if (need > 0) {
            auto stacks = st.stacks;
            out = intern_state(std::move(stacks), v, need, 0);
        } else {
            out = advance(states_[static_cast<std::size_t>(s)].stacks, token_code_base + v);
        }
    } else if ((b & 0xC0) == 0x80) {
        const std::uint32_t v = (st.partial << 6) | (b & 0x3FU);
        const auto need = static_cast<std::uint8_t>(st.need - 1);
        if (need > 0) {
            out = open_sequence(s, v, need, st.length);
        } else {
            static constexpr std::uint32_t min_of_length[5] = {0, 0, 0x80, 0x800, 0x10000};
            const bool valid = v >= min_of_length[st.length] && v <= 0x10FFFF && (v < 0xD800 || v > 0xDFFF);
            out = valid ? advance(states_[static_cast<std::size_t>(s)].stacks, v) : dead;
        }
    }
    auto& table = states_[static_cast<std::size_t>(s)].next; // states_ may have grown: look it up again
    if (!table) {
        table = std::make_unique<std::array<state_id, 256>>();
        table->fill(unknown);
    }
    (*table)[b] = out;
    return out;
}

bool matcher::returns_on_all(state_id s, std::uint32_t lo, std::uint32_t hi) {
    if (states_[static_cast<std::size_t>(s)].need != 0) {
        return false;
    }
    // The set of top classes matching a code point changes only at their range ends: one probe per run.
    std::vector<std::uint32_t> cuts{lo, hi + 1, 0xD800, 0xE000};
    for (const auto top : states_[static_cast<std::size_t>(s)].stacks) {
        if (top != 0) {
            for (const auto& r : g_->classes[g_->elements[nodes_[top].pos].value].ranges) {
                cuts.push_back(r.first);
                cuts.push_back(r.second + 1);
            }
        }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::uint32_t cp = cuts[i];
        if (cp < lo || cp > hi || (cp >= 0xD800 && cp <= 0xDFFF)) {
            continue;
        }
        const auto stacks = states_[static_cast<std::size_t>(s)].stacks; // advance may grow states_
        if (advance(stacks, cp) != s) {
            return false;
        }
    }
    return true;
}

matcher::state_id matcher::sequence_start(state_id s) {
    if (states_[static_cast<std::size_t>(s)].need == 0) {
        return s;
    }
    auto stacks = states_[static_cast<std::size_t>(s)].stacks;
    return intern_state(std::move(stacks), 0, 0, 0);
}

bool matcher::accept(std::string_view bytes) {
    state_id s = current_;
    for (const char c : bytes) {
        if (s == dead) {
            return false;
        }
        s = step(s, static_cast<std::uint8_t>(c));
    }
    if (s == dead) {
        return false;
    }
    current_ = s;
    return true;
}

matcher::node_id matcher::copy_chain(node_id n, const std::vector<node>& old_nodes,
                                     std::unordered_map<node_id, node_id>& map) {
    // Walk down to a node already copied (or the bottom), then intern the chain back up.
    std::vector<node_id> chain;
    while (n != 0 && !map.contains(n)) {
        chain.push_back(n);
        n = old_nodes[n].parent;
    }
    node_id below = n == 0 ? 0 : map[n];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        below = intern_node(old_nodes[*it].pos, below);
        map.emplace(*it, below);
    }
    return below;
}

bool matcher::compact(std::size_t max_nodes, std::size_t max_states) {
    if (nodes_.size() <= max_nodes && states_.size() <= max_states) {
        return false;
    }
    assert(current_ != dead);
    state old = std::move(states_[static_cast<std::size_t>(current_)]);
    const std::vector<node> old_nodes = std::move(nodes_);
    nodes_.clear();
    nodes_.push_back({0, 0});
    node_index_.clear();
    states_.clear();
    state_index_.clear();
    std::unordered_map<node_id, node_id> map;
    std::vector<node_id> stacks;
    for (const auto top : old.stacks) {
        stacks.push_back(top == 0 ? 0 : copy_chain(top, old_nodes, map));
    }
    current_ = intern_state(std::move(stacks), old.partial, old.need, old.length);
    return true;
}

} // namespace sluice::grammar
