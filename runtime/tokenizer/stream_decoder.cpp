// Streaming detokenizer: appends token bytes to a pending buffer and releases the longest prefix that
// ends on a UTF-8 character boundary, with invalid bytes replaced by U+FFFD.
#include "runtime/tokenizer/stream_decoder.hpp"

#include "runtime/tokenizer/unicode.hpp"

namespace sluice::tokenizer {
namespace {

/// Length of the prefix of `s` that holds only complete UTF-8 sequences (a stray byte counts as complete).
std::size_t complete_prefix(std::string_view s) {
    const std::size_t n = s.size();
    // Look back at most 3 bytes for the lead byte of a sequence that would run past the end.
    for (std::size_t back = 1; back <= 4 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80)
            continue; // continuation byte
        const std::size_t need = utf8_sequence_length(c);
        return need > back ? n - back : n;
    }
    return n;
}

} // namespace

stream_decoder::stream_decoder(const tokenizer& tok, decode_options opts) : tok_(&tok), opts_(opts) {}

std::string stream_decoder::push(token_id id) {
    std::string_view p = tok_->piece(id, opts_.skip_special);
    if (p.empty())
        return {};
    const vocab& v = tok_->description();
    if (first_ && (v.rank_merges || !tok_->is_control(id))) { // as tokenizer::decode strips
        first_ = false;
        if (v.model == model_kind::spm && v.add_space_prefix && opts_.strip_space_prefix && p.front() == ' ') {
            p.remove_prefix(1);
        }
    }
    pending_ += p;
    const std::size_t ready = complete_prefix(pending_);
    std::string out = valid_utf8(std::string_view(pending_).substr(0, ready));
    pending_.erase(0, ready);
    return out;
}

std::string stream_decoder::flush() {
    std::string out;
    for (std::size_t i = 0; i < pending_.size(); ++i)
        out += "\xEF\xBF\xBD";
    pending_.clear();
    first_ = true;
    return out;
}

} // namespace sluice::tokenizer
