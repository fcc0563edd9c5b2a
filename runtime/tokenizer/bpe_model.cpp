// Byte-level BPE merging: symbols start as byte tokens; the adjacent pair with the lowest merge rank
// (leftmost on ties) merges until no ranked pair remains. A heap keeps long pieces O(n log n). SentencePiece
// vocabularies with ranked merges (Hugging Face BPE with byte_fallback) start from UTF-8 characters instead.
#include "runtime/tokenizer/bpe_model.hpp"

#include "runtime/tokenizer/byte_level.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <queue>

namespace sluice::tokenizer {
namespace {

std::uint64_t pair_key(token_id l, token_id r) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) | static_cast<std::uint32_t>(r);
}

std::uint64_t hash_key(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/// A candidate merge of the symbol at `left` with its right neighbour.
struct candidate {
    std::int32_t rank;
    std::int32_t left;
    token_id left_id;
    token_id right_id;
    bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

} // namespace

result<bpe_model> bpe_model::build(const vocab& v, const std::unordered_map<std::string, token_id>& text_to_id) {
    bpe_model m;
    m.ignore_merges_ = v.ignore_merges;
    m.text_to_id_ = &text_to_id;
    m.characters_ = v.model == model_kind::spm;
    m.unk_ = v.unk;
    for (unsigned b = 0; b < 256; ++b) {
        std::string text;
        if (m.characters_) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            text = name;
        } else {
            append_byte_level(text, std::string_view(reinterpret_cast<const char*>(&b), 1));
        }
        const auto it = text_to_id.find(text);
        m.byte_token_[b] = it == text_to_id.end() ? -1 : it->second; // e.g. 0xC0: never in valid UTF-8
    }
    if (!m.characters_ && (m.byte_token_['a'] < 0 || m.byte_token_[' '] < 0)) {
        return make_error(std::errc::invalid_argument, "vocabulary is not byte-level (no token for 'a' or ' ')");
    }
    const std::size_t slots = std::bit_ceil(std::max<std::size_t>(16, v.merges.size() * 2));
    m.table_.assign(slots, merge_entry{});
    m.mask_ = slots - 1;
    std::string joined;
    for (std::size_t rank = 0; rank < v.merges.size(); ++rank) {
        const auto& [a, b] = v.merges[rank];
        const auto ia = text_to_id.find(a);
        const auto ib = text_to_id.find(b);
        joined.assign(a).append(b);
        const auto ij = text_to_id.find(joined);
        if (ia == text_to_id.end() || ib == text_to_id.end() || ij == text_to_id.end())
            continue;
        m.insert_merge(ia->second, ib->second, static_cast<std::int32_t>(rank), ij->second);
    }
    return m;
}

void bpe_model::insert_merge(token_id left, token_id right, std::int32_t rank, token_id result) {
    const std::uint64_t key = pair_key(left, right);
    for (std::uint64_t i = hash_key(key) & mask_;; i = (i + 1) & mask_) {
        merge_entry& e = table_[i];
        if (e.key == key)
            return; // keep the first (highest-priority) duplicate
        if (e.key == ~std::uint64_t{0}) {
            e = merge_entry{key, rank, result};
            return;
        }
    }
}

const bpe_model::merge_entry* bpe_model::find_merge(token_id left, token_id right) const noexcept {
    const std::uint64_t key = pair_key(left, right);
    for (std::uint64_t i = hash_key(key) & mask_;; i = (i + 1) & mask_) {
        const merge_entry& e = table_[i];
        if (e.key == key)
            return &e;
        if (e.key == ~std::uint64_t{0})
            return nullptr;
    }
}

void bpe_model::encode_piece(std::string_view bytes, std::vector<token_id>& out) const {
    if (bytes.empty())
        return;
    if (characters_) {
        thread_local std::vector<token_id> symbols;
        split_characters(bytes, symbols);
        merge_symbols(symbols);
        out.insert(out.end(), symbols.begin(), symbols.end());
        return;
    }
    if (bytes.size() == 1) {
        if (const token_id id = byte_token_[static_cast<unsigned char>(bytes[0])]; id >= 0)
            out.push_back(id);
        return;
    }
    if (ignore_merges_) {
        thread_local std::string text;
        text.clear();
        append_byte_level(text, bytes);
        if (const auto it = text_to_id_->find(text); it != text_to_id_->end()) {
            out.push_back(it->second);
            return;
        }
    }
    thread_local std::vector<token_id> symbols;
    symbols.clear();
    for (const char c : bytes) {
        // A byte without a token is dropped, as Hugging Face does for characters missing from the vocabulary.
        if (const token_id id = byte_token_[static_cast<unsigned char>(c)]; id >= 0)
            symbols.push_back(id);
    }
    merge_symbols(symbols);
    out.insert(out.end(), symbols.begin(), symbols.end());
}

void bpe_model::split_characters(std::string_view text, std::vector<token_id>& symbols) const {
    symbols.clear();
    bool last_unknown = false;
    thread_local std::string key;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t len =
            std::min(utf8_sequence_length(static_cast<unsigned char>(text[pos])), text.size() - pos);
        key.assign(text.substr(pos, len));
        pos += len;
        if (const auto it = text_to_id_->find(key); it != text_to_id_->end()) {
            symbols.push_back(it->second);
            last_unknown = false;
            continue;
        }
        // Byte fallback when every byte has a token, as Hugging Face does; else one (fused) unknown token.
        const bool all_bytes = std::all_of(key.begin(), key.end(),
                                           [&](char c) { return byte_token_[static_cast<unsigned char>(c)] >= 0; });
        if (all_bytes) {
            for (const char c : key)
                symbols.push_back(byte_token_[static_cast<unsigned char>(c)]);
            last_unknown = false;
        } else if (unk_ && !last_unknown) {
            symbols.push_back(*unk_);
            last_unknown = true;
        }
    }
}

void bpe_model::merge_symbols(std::vector<token_id>& symbols) const {
    const auto n = static_cast<std::int32_t>(symbols.size());
    thread_local std::vector<std::int32_t> prev;
    thread_local std::vector<std::int32_t> next;
    thread_local std::vector<candidate> heap_storage;
    prev.resize(n);
    next.resize(n);
    for (std::int32_t i = 0; i < n; ++i) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    heap_storage.clear();
    std::priority_queue<candidate, std::vector<candidate>, std::greater<>> heap(std::greater<>{},
                                                                                std::move(heap_storage));
    auto push = [&](std::int32_t left) {
        const std::int32_t right = next[left];
        if (right < 0)
            return;
        if (const merge_entry* e = find_merge(symbols[left], symbols[right])) {
            heap.push(candidate{e->rank, left, symbols[left], symbols[right]});
        }
    };
    for (std::int32_t i = 0; i + 1 < n; ++i)
        push(i);
    // Pop the best pair, skip stale entries, merge right into left, and offer the two new pairs.
    while (!heap.empty()) {
        const candidate c = heap.top();
        heap.pop();
        const std::int32_t right = next[c.left];
        if (symbols[c.left] != c.left_id || right < 0 || symbols[right] != c.right_id)
            continue;
        symbols[c.left] = find_merge(c.left_id, c.right_id)->result;
        symbols[right] = -1;
        next[c.left] = next[right];
        if (next[right] >= 0)
            prev[next[right]] = c.left;
        if (prev[c.left] >= 0)
            push(prev[c.left]);
        push(c.left);
    }
    std::erase(symbols, -1);
}

} // namespace sluice::tokenizer
