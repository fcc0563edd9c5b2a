// SentencePiece BPE as llama.cpp and sentencepiece apply it: start from UTF-8 characters, repeatedly merge
// the adjacent pair whose concatenation is the highest-scoring token (leftmost on ties), then emit each
// symbol as its token or, when it is not one, as byte-fallback tokens.
#include "runtime/tokenizer/spm_model.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <cstdio>
#include <queue>

namespace sluice::tokenizer {
namespace {

struct bigram {
    float score;
    std::int32_t left;
    std::int32_t right;
    std::uint32_t len;
    bool operator<(const bigram& o) const { return score != o.score ? score < o.score : left > o.left; }
};

} // namespace

result<spm_model> spm_model::build(const vocab& v, const std::unordered_map<std::string, token_id>& text_to_id) {
    if (v.scores.size() != v.tokens.size()) {
        return make_error(std::errc::invalid_argument, "SentencePiece vocabulary needs one score per token");
    }
    spm_model m;
    m.scores_ = v.scores;
    m.unk_ = v.unk;
    m.text_to_id_ = &text_to_id;
    for (unsigned b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = text_to_id.find(name);
        m.byte_token_[b] = it == text_to_id.end() ? -1 : it->second;
    }
    return m;
}

std::optional<token_id> spm_model::find(std::string_view text) const {
    thread_local std::string key;
    key.assign(text);
    const auto it = text_to_id_->find(key);
    if (it == text_to_id_->end())
        return std::nullopt;
    return it->second;
}

void spm_model::emit(std::string_view text, std::vector<token_id>& out) const {
    if (const auto id = find(text)) {
        out.push_back(*id);
        return;
    }
    for (const char c : text) {
        const token_id b = byte_token_[static_cast<unsigned char>(c)];
        if (b >= 0) {
            out.push_back(b);
        } else if (unk_) {
            out.push_back(*unk_);
        }
    }
}

void spm_model::encode_text(std::string_view text, std::vector<token_id>& out) const {
    std::vector<symbol> syms;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t len =
            std::min(utf8_sequence_length(static_cast<unsigned char>(text[pos])), text.size() - pos);
        const auto i = static_cast<std::int32_t>(syms.size());
        syms.push_back({static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(len), i - 1, i + 1});
        pos += len;
    }
    if (syms.empty())
        return;
    syms.back().next = -1;
    std::priority_queue<bigram> queue;
    auto offer = [&](std::int32_t l, std::int32_t r) {
        if (l < 0 || r < 0)
            return;
        const std::uint32_t len = syms[l].len + syms[r].len;
        if (const auto id = find(text.substr(syms[l].begin, len)))
            queue.push({scores_[*id], l, r, len});
    };
    for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(syms.size()); ++i)
        offer(i, i + 1);
    // Merge best-first; entries whose symbols changed since they were queued are stale.
    while (!queue.empty()) {
        const bigram b = queue.top();
        queue.pop();
        symbol& l = syms[b.left];
        symbol& r = syms[b.right];
        if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len)
            continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0)
            syms[r.next].prev = b.left;
        offer(l.prev, b.left);
        offer(b.left, l.next);
    }
    for (std::int32_t i = 0; i >= 0; i = syms[i].next)
        emit(text.substr(syms[i].begin, syms[i].len), out);
}

} // namespace sluice::tokenizer
