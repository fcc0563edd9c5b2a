// token_trie built from a tokenizer, and token_filter's masks: one walk of the trie per new matcher state.
#include "runtime/grammar/token_mask.hpp"

#include "runtime/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <numeric>

namespace sluice::grammar {

token_trie::token_trie(const tokenizer::tokenizer& vocab, std::size_t n_vocab)
    : n_vocab_(std::max(n_vocab, vocab.size())) {
    const auto eog = vocab.end_of_generation();
    eog_.assign(eog.begin(), eog.end());
    // Every token's bytes in one blob; control tokens get none.
    offsets_.push_back(0);
    for (std::size_t i = 0; i < vocab.size(); ++i) {
        const auto id = static_cast<std::int32_t>(i);
        if (!vocab.is_control(id) && !is_end_of_generation(id)) {
            const auto piece = vocab.piece(id);
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
            nodes_.push_back({0, t, t, static_cast<std::uint16_t>(d + 1), static_cast<std::uint8_t>(s[d])});
        }
        tokens_.push_back(id);
        nodes_[open.back()].tok_end = static_cast<std::uint32_t>(tokens_.size());
        max_depth_ = std::max(max_depth_, s.size());
        previous = s;
    }
    for (const auto n : open) {
        nodes_[n].skip = static_cast<std::uint32_t>(nodes_.size());
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

token_filter::token_filter(std::shared_ptr<const grammar> g, std::shared_ptr<const token_trie> trie)
    : matcher_(std::move(g)), trie_(std::move(trie)), walk_(trie_->max_depth() + 1) {}

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
