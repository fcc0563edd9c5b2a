// token_trie built from a tokenizer, and token_filter's masks: one walk of the trie per new matcher state.
#include "runtime/grammar/token_mask.hpp"

#include "runtime/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

namespace sluice::grammar {

token_trie::token_trie(const tokenizer::tokenizer& vocab, std::size_t n_vocab)
    : n_vocab_(std::max(n_vocab, vocab.size())) {
    const auto eog = vocab.end_of_generation();
    eog_.assign(eog.begin(), eog.end());
    // Every token's bytes in one blob. A control token's are matcher::token_lead and its id in 3 bytes, which
    // only a grammar's `<[id]>` accepts; a text token holding that byte (never valid UTF-8, so no grammar text
    // could accept it) gets none, so no text can spell a control token's form.
    offsets_.push_back(0);
    for (std::size_t i = 0; i < vocab.size(); ++i) {
        const auto id = static_cast<std::int32_t>(i);
        if (is_end_of_generation(id)) {
            // listed apart
        } else if (vocab.is_control(id)) {
            if (i <= max_token_ref) {
                const auto u = static_cast<std::uint32_t>(i);
                blob_.insert(blob_.end(), {static_cast<char>(matcher::token_lead), static_cast<char>(u >> 16),
                                           static_cast<char>((u >> 8) & 0xFFU), static_cast<char>(u & 0xFFU)});
            }
        } else if (const auto piece = vocab.piece(id); piece.find(static_cast<char>(matcher::token_lead)) ==
                                                        std::string_view::npos) {
            blob_.insert(blob_.end(), piece.begin(), piece.end());
        }
        offsets_.push_back(static_cast<std::uint32_t>(blob_.size()));
    }
    std::vector<std::int32_t> order;
    for (std::size_t i = 0; i < vocab.size(); ++i) {
        if (!bytes(static_cast<std::int32_t>(i)).empty()) {
            order.push_back(static_cast<std::int32_t>(i));
        }
    }
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        const auto x = bytes(a);
        const auto y = bytes(b);
        return x != y ? x < y : a < b;
    });
    // Sorted strings give the trie in depth-first order: each string adds the nodes past its common prefix
    // with the one before; a node's subtree ends when a later string leaves its prefix.
    std::vector<std::uint32_t> open; // node index per depth of the current path
    std::string_view previous;
    for (const auto id : order) {
        const auto s = bytes(id);
        std::size_t common = 0;
        while (common < s.size() && common < previous.size() && s[common] == previous[common]) {
            ++common;
        }
        while (open.size() > common) {
            nodes_[open.back()].skip = static_cast<std::uint32_t>(nodes_.size());
            open.pop_back();
        }
        for (std::size_t d = common; d < s.size(); ++d) {
            open.push_back(static_cast<std::uint32_t>(nodes_.size()));
            const auto t = static_cast<std::uint32_t>(tokens_.size());
            nodes_.push_back(
                {0, t, t, 0, static_cast<std::uint16_t>(d + 1), static_cast<std::uint8_t>(s[d]), false, false});
        }
        tokens_.push_back(id);
        nodes_[open.back()].tok_end = static_cast<std::uint32_t>(tokens_.size());
        max_depth_ = std::max(max_depth_, s.size());
        previous = s;
    }
    for (const auto n : open) {
        nodes_[n].skip = static_cast<std::uint32_t>(nodes_.size());
    }
    mark_text_subtrees();
}

namespace {

/// Where a UTF-8 decoder stands after a path: the bytes the next one must lie in (0 needed: at a boundary).
struct utf8_position {
    std::uint8_t need = 0;
    std::uint8_t lo = 0x80, hi = 0xBF;
    bool bad = false;
};

utf8_position after(utf8_position p, std::uint8_t b) {
    if (p.bad) {
        return p;
    }
    if (p.need > 0) {
        if (b < p.lo || b > p.hi) {
            return {0, 0, 0, true};
        }
        return {static_cast<std::uint8_t>(p.need - 1), 0x80, 0xBF, false};
    }
    if (b < 0x80) {
        return {0, 0x80, 0xBF, !token_trie::is_plain_byte(b)};
    }
    // Well-formed UTF-8 (the Unicode standard's table 3-7): no overlongs, no surrogates, nothing past U+10FFFF.
    if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF, false};
    if (b == 0xE0) return {2, 0xA0, 0xBF, false};
    if (b == 0xED) return {2, 0x80, 0x9F, false};
    if (b >= 0xE1 && b <= 0xEF) return {2, 0x80, 0xBF, false};
    if (b == 0xF0) return {3, 0x90, 0xBF, false};
    if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF, false};
    if (b == 0xF4) return {3, 0x80, 0x8F, false};
    return {0, 0, 0, true};
}

} // namespace

// Subtree token ranges, and which subtrees hold only plain bytes or only text (counted with prefix sums over
// the depth-first order, where a subtree is a contiguous run).
void token_trie::mark_text_subtrees() {
    std::vector<std::uint32_t> not_plain(nodes_.size() + 1, 0);
    std::vector<std::uint32_t> not_text(nodes_.size() + 1, 0);
    std::vector<utf8_position> at(max_depth_ + 1);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto& n = nodes_[i];
        at[n.depth] = after(at[n.depth - 1U], n.byte);
        not_plain[i + 1] = not_plain[i] + (is_plain_byte(n.byte) ? 0U : 1U);
        not_text[i + 1] = not_text[i] + (at[n.depth].bad ? 1U : 0U);
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        auto& n = nodes_[i];
        n.subtree_end = n.skip < nodes_.size() ? nodes_[n.skip].tok_begin : static_cast<std::uint32_t>(tokens_.size());
        n.plain_below = not_plain[n.skip] == not_plain[i + 1];
        n.text_below = not_text[i + 1] == not_text[i] && not_text[n.skip] == not_text[i + 1];
    }
}

bool token_trie::is_end_of_generation(std::int32_t id) const noexcept {
    return std::binary_search(eog_.begin(), eog_.end(), id);
}

std::string_view token_trie::bytes(std::int32_t id) const noexcept {
    if (id < 0 || static_cast<std::size_t>(id) + 1 >= offsets_.size()) {
        return {};
    }
    const auto i = static_cast<std::size_t>(id);
    return {blob_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
}

std::int32_t token_mask::apply(std::span<const float> logits, std::span<float> out) const noexcept {
    constexpr float minus_inf = -std::numeric_limits<float>::infinity();
    std::int32_t first = -1;
    const std::size_t n = std::min(logits.size(), out.size());
    for (std::size_t base = 0; base < n; base += 64) {
        const std::size_t end = std::min(n, base + 64);
        const std::uint64_t w = (base >> 6) < bits.size() ? bits[base >> 6] : 0;
        if (w == 0) {
            std::fill(out.begin() + static_cast<std::ptrdiff_t>(base), out.begin() + static_cast<std::ptrdiff_t>(end),
                      minus_inf);
            continue;
        }
        if (first < 0) {
            first = static_cast<std::int32_t>(base) + std::countr_zero(w);
        }
        for (std::size_t i = base; i < end; ++i) {
            out[i] = ((w >> (i - base)) & 1U) != 0 ? logits[i] : minus_inf;
        }
    }
    return first < static_cast<std::int32_t>(n) ? first : -1;
}

token_filter::token_filter(std::shared_ptr<const grammar> g, std::shared_ptr<const token_trie> trie)
    : matcher_(std::move(g)), trie_(std::move(trie)), walk_(trie_->max_depth() + 1) {}

result<void> check_token_refs(const grammar& g, const token_trie& trie) {
    for (const auto& c : g.classes) {
        if (c.negated) {
            continue; // a negated class never holds a control token
        }
        for (const auto& [lo, hi] : c.ranges) {
            for (auto cp = std::max(lo, token_code_base); cp <= hi; ++cp) {
                const auto id = cp - token_code_base;
                const auto ref = "<[" + std::to_string(id) + "]>";
                if (id >= trie.n_vocab()) {
                    return make_error(std::errc::invalid_argument, ref + " names token " + std::to_string(id) +
                                                                       ", outside this model's " +
                                                                       std::to_string(trie.n_vocab()) + " tokens");
                }
                const auto bytes = trie.bytes(static_cast<std::int32_t>(id));
                if (bytes.empty() || static_cast<std::uint8_t>(bytes.front()) != matcher::token_lead) {
                    return make_error(std::errc::invalid_argument,
                                      ref + " names token " + std::to_string(id) +
                                          ", which is not a control token of this model (only those are written "
                                          "<[id]>; text is written as text, and the end of generation is implicit)");
                }
            }
        }
    }
    return {};
}

void token_filter::compute(matcher::state_id s, token_mask& out) {
    out.bits.assign((trie_->n_vocab() + 63) / 64, 0);
    out.any_text = false;
    if (s == matcher::dead) {
        return;
    }
    const auto nodes = trie_->nodes();
    const auto tokens = trie_->tokens();
    walk_[0] = s;
    for (std::size_t i = 0; i < nodes.size();) {
        const auto& n = nodes[i];
        const auto next = matcher_.step(walk_[n.depth - 1U], n.byte);
        if (next == matcher::dead) {
            i = n.skip;
            continue;
        }
        walk_[n.depth] = next;
        if ((n.plain_below || n.text_below) && subtree_allowed(next, n.plain_below)) {
            // Inside a string every plain byte comes back to this state: the whole subtree is allowed.
            for (auto t = n.tok_begin; t < n.subtree_end; ++t) {
                const auto id = static_cast<std::size_t>(tokens[t]);
                out.bits[id >> 6] |= std::uint64_t{1} << (id & 63);
            }
            out.any_text = true;
            i = n.skip;
            continue;
        }
        if (const auto run = n.plain_below ? plain_run(next) : -1; run >= 0) {
            // Every plain byte leads to one same state, depth after depth (a bounded string): tokens below
            // are allowed by their depth alone, without stepping.
            allow_by_depth(i, run, out);
            i = n.skip;
            continue;
        }
        for (auto t = n.tok_begin; t < n.tok_end; ++t) {
            const auto id = static_cast<std::size_t>(tokens[t]);
            out.bits[id >> 6] |= std::uint64_t{1} << (id & 63);
            out.any_text = true;
        }
        ++i;
    }
    if (matcher_.is_complete(s)) {
        for (const auto id : trie_->end_of_generation()) {
            const auto u = static_cast<std::size_t>(id);
            out.bits[u >> 6] |= std::uint64_t{1} << (u & 63);
        }
    }
}

bool token_filter::loops_on_plain(matcher::state_id s) {
    const auto i = static_cast<std::size_t>(s);
    if (i >= plain_loop_.size()) {
        plain_loop_.resize(std::max(i + 1, plain_loop_.size() * 2), -1);
    }
    if (plain_loop_[i] < 0) {
        bool loops = true;
        for (unsigned b = 0x20; b < 0x7F && loops; ++b) {
            loops = !token_trie::is_plain_byte(static_cast<std::uint8_t>(b)) ||
                    matcher_.step(s, static_cast<std::uint8_t>(b)) == s;
        }
        plain_loop_[i] = loops ? 1 : 0;
    }
    return plain_loop_[i] == 1;
}

// Whether from state `s` every continuation of a subtree holding only plain bytes (`plain`) or only text is
// allowed: `s` (or, inside a UTF-8 sequence, the state where the sequence began) comes back to itself on
// every plain byte and, unless the subtree is plain, on every code point from U+0080 up.
bool token_filter::subtree_allowed(matcher::state_id s, bool plain) {
    const auto base = matcher_.sequence_start(s);
    if (base == matcher::dead || !loops_on_plain(base)) {
        return false;
    }
    return (plain && base == s) || loops_on_text(base);
}

// How many more plain bytes state `s` takes when each of them leads to one same state whatever the byte (as in
// a bounded run of string characters), up to the longest token; -1 when some state on the way is not uniform.
std::int32_t token_filter::plain_run(matcher::state_id s) {
    const auto limit = static_cast<std::int32_t>(trie_->max_depth());
    std::vector<matcher::state_id> chain;
    std::int32_t run = 0;
    for (auto at = s; run < limit; ++run) {
        const auto i = static_cast<std::size_t>(at);
        if (i < plain_run_.size() && plain_run_[i] != -3) {
            run = plain_run_[i] < 0 ? -1 : std::min(limit, run + plain_run_[i]);
            break;
        }
        chain.push_back(at);
        matcher::state_id next = matcher::dead;
        bool uniform = true;
        for (unsigned b = 0x20; b < 0x7F && uniform; ++b) {
            if (token_trie::is_plain_byte(static_cast<std::uint8_t>(b))) {
                const auto t = matcher_.step(at, static_cast<std::uint8_t>(b));
                uniform = b == 0x20 || t == next;
                next = t;
            }
        }
        if (!uniform) {
            run = -1;
            break;
        }
        if (next == matcher::dead) {
            break;
        }
        at = next;
    }
    // Memoize along the chain: each state's run is what is left of the first one's.
    for (std::size_t k = 0; k < chain.size(); ++k) {
        const auto i = static_cast<std::size_t>(chain[k]);
        if (i >= plain_run_.size()) {
            plain_run_.resize(std::max(i + 1, plain_run_.size() * 2), -3);
        }
        plain_run_[i] = run < 0 ? -1 : std::max(0, run - static_cast<std::int32_t>(k));
    }
    return run;
}

// Node i's tokens, and those of its (plain) subtree that end at most `run` bytes below it.
void token_filter::allow_by_depth(std::size_t i, std::int32_t run, token_mask& out) {
    const auto nodes = trie_->nodes();
    const auto tokens = trie_->tokens();
    const auto top = nodes[i].depth;
    for (std::size_t j = i; j < nodes[i].skip; ++j) {
        const auto& n = nodes[j];
        if (static_cast<std::int32_t>(n.depth - top) > run) {
            continue;
        }
        for (auto t = n.tok_begin; t < n.tok_end; ++t) {
            const auto id = static_cast<std::size_t>(tokens[t]);
            out.bits[id >> 6] |= std::uint64_t{1} << (id & 63);
            out.any_text = true;
        }
    }
}

bool token_filter::loops_on_text(matcher::state_id s) {
    const auto i = static_cast<std::size_t>(s);
    if (i >= text_loop_.size()) {
        text_loop_.resize(std::max(i + 1, text_loop_.size() * 2), -1);
    }
    if (text_loop_[i] < 0) {
        text_loop_[i] = matcher_.returns_on_all(s, 0x80, 0x10FFFF) ? 1 : 0;
    }
    return text_loop_[i] == 1;
}

const token_mask& token_filter::allowed() {
    const auto s = matcher_.current();
    auto it = cache_.find(s);
    if (it == cache_.end()) {
        if (cache_.size() >= 64) {
            cache_.clear(); // bounded memory: about 19 KiB a mask at 151k tokens
        }
        it = cache_.emplace(s, token_mask{}).first;
        compute(s, it->second);
    }
    return it->second;
}

bool token_filter::accept(std::int32_t id) {
    const auto b = trie_->bytes(id);
    if (b.empty() || !matcher_.accept(b)) {
        return false;
    }
    if (matcher_.compact()) {
        cache_.clear(); // state ids were renumbered
        plain_loop_.clear();
        text_loop_.clear();
        plain_run_.clear();
    }
    return true;
}

bool token_filter::only_end_remains() {
    if (!matcher_.is_complete()) {
        return false;
    }
    return !matcher_.can_continue(matcher_.current()) || !allowed().any_text;
}

} // namespace sluice::grammar
