// Tokenizer construction, special-token splitting of the input, and decoding.
#include "runtime/tokenizer/tokenizer.hpp"

#include "runtime/tokenizer/bpe_model.hpp"
#include "runtime/tokenizer/byte_level.hpp"
#include "runtime/tokenizer/spm_model.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <unordered_map>

namespace sluice::tokenizer {
namespace {

constexpr std::string_view spm_space = "\xE2\x96\x81"; // U+2581

/// Texts of tokens that end generation in current model families, besides the declared EOS/EOT/EOM.
constexpr std::string_view end_of_generation_texts[] = {
    "<|endoftext|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<|return|>",
    "<|call|>",
    "<|end|>",
    "</s>",
    "<EOT>",
    "<|eos|>",
    "<|endofturn|>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", // DeepSeek
};

struct special_entry {
    std::string_view text;
    token_id id;
    bool control; ///< matched only when parse_special; user-defined tokens always match
};

/// The bytes a SentencePiece token stands for: <0xAB> byte tokens, U+2581 as a space.
std::string spm_piece(std::string_view text, token_type type) {
    if (type == token_type::byte && text.size() == 6 && text.starts_with("<0x") && text.back() == '>') {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(text.data() + 3, text.data() + 5, value, 16);
        if (ec == std::errc{} && end == text.data() + 5)
            return std::string(1, static_cast<char>(value));
    }
    std::string out;
    for (std::size_t pos = 0; pos < text.size();) {
        if (text.substr(pos, 3) == spm_space) {
            out += ' ';
            pos += 3;
        } else {
            out += text[pos++];
        }
    }
    return out;
}

} // namespace

struct tokenizer::state {
    vocab v;
    std::unordered_map<std::string, token_id> text_to_id;
    std::vector<std::string> pieces;
    std::optional<bpe_model> bpe;
    std::optional<spm_model> spm;
    std::array<std::vector<special_entry>, 256> specials; ///< by first byte, longest first
    std::vector<std::string> control_texts;               ///< texts of the control tokens, in id order
    std::vector<token_id> eog;

    token_type type_of(token_id id) const {
        return v.types.empty() ? token_type::normal : v.types[static_cast<std::size_t>(id)];
    }
    void index_tokens();              ///< text_to_id, pieces and the special-token table
    void collect_end_of_generation(); ///< eog from the declared ids and well-known texts
};

tokenizer::tokenizer(std::unique_ptr<state> s) : state_(std::move(s)) {}
tokenizer::tokenizer(tokenizer&&) noexcept = default;
tokenizer& tokenizer::operator=(tokenizer&&) noexcept = default;
tokenizer::~tokenizer() = default;

namespace {

result<void> check_vocab(const vocab& v) {
    const std::size_t n = v.tokens.size();
    if (!v.types.empty() && v.types.size() != n) {
        return make_error(std::errc::invalid_argument, "token_type has " + std::to_string(v.types.size()) +
                                                           " entries for " + std::to_string(n) + " tokens");
    }
    for (auto id : {v.bos, v.eos, v.eot, v.eom, v.unk, v.pad}) {
        if (id && (*id < 0 || static_cast<std::size_t>(*id) >= n)) {
            return make_error(std::errc::invalid_argument, "special token id " + std::to_string(*id) + " out of range");
        }
    }
    return {};
}

} // namespace

void tokenizer::state::index_tokens() {
    const std::size_t n = v.tokens.size();
    text_to_id.reserve(n);
    pieces.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto id = static_cast<token_id>(i);
        const std::string& text = v.tokens[i];
        text_to_id.emplace(text, id);
        const token_type type = type_of(id);
        const bool raw = type == token_type::control || type == token_type::user_defined;
        if (v.model == model_kind::spm) {
            pieces[i] = raw ? text : spm_piece(text, type);
        } else {
            auto bytes = raw ? std::nullopt : decode_byte_level(text);
            pieces[i] = bytes ? std::move(*bytes) : text;
        }
        if (raw && !text.empty()) {
            specials[static_cast<unsigned char>(text[0])].push_back({text, id, type == token_type::control});
            if (type == token_type::control)
                control_texts.push_back(text);
        }
    }
    for (auto& bucket : specials) {
        std::stable_sort(bucket.begin(), bucket.end(),
                         [](const special_entry& a, const special_entry& b) { return a.text.size() > b.text.size(); });
    }
}

void tokenizer::state::collect_end_of_generation() {
    for (auto id : {v.eos, v.eot, v.eom}) {
        if (id)
            eog.push_back(*id);
    }
    // gpt-oss ends a message with <|end|> but the whole reply with <|return|>.
    const bool has_return = text_to_id.contains("<|return|>");
    for (std::string_view t : end_of_generation_texts) {
        const auto it = text_to_id.find(std::string(t));
        if (it == text_to_id.end() || (has_return && t == "<|end|>"))
            continue;
        const token_type type = type_of(it->second);
        if (type == token_type::control || type == token_type::user_defined)
            eog.push_back(it->second);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
}

result<tokenizer> tokenizer::create(vocab v) {
    if (auto ok = check_vocab(v); !ok)
        return ok.error();
    auto s = std::make_unique<state>();
    s->v = std::move(v);
    s->index_tokens();
    s->collect_end_of_generation();
    if (s->v.model == model_kind::bpe || s->v.rank_merges) {
        auto m = bpe_model::build(s->v, s->text_to_id);
        if (!m)
            return m.error().with_context("BPE vocabulary");
        s->bpe.emplace(std::move(*m));
    } else {
        auto m = spm_model::build(s->v, s->text_to_id);
        if (!m)
            return m.error().with_context("SentencePiece vocabulary");
        s->spm.emplace(std::move(*m));
    }
    return tokenizer(std::move(s));
}

void tokenizer::encode_text(std::string_view text, bool after_special, std::vector<token_id>& out) const {
    if (text.empty())
        return;
    const state& s = *state_;
    if (s.v.normalizer == normalizer_kind::nfc) {
        thread_local std::string normalized;
        text = to_nfc(text, normalized);
    }
    if (s.v.model == model_kind::spm) {
        thread_local std::string escaped;
        escaped.clear();
        if (s.v.add_space_prefix && after_special)
            escaped += spm_space;
        for (const char c : text) {
            if (c == ' ') {
                escaped += spm_space;
            } else {
                escaped += c;
            }
        }
        if (s.spm) {
            s.spm->encode_text(escaped, out);
        } else {
            s.bpe->encode_piece(escaped, out);
        }
        return;
    }
    thread_local std::vector<text_span> pieces;
    pre_tokenize(s.v.pre, text, pieces);
    for (const text_span p : pieces)
        s.bpe->encode_piece(text.substr(p.begin, p.end - p.begin), out);
}

void tokenizer::encode(std::string_view text, const encode_options& opts, std::vector<token_id>& out) const {
    const state& s = *state_;
    if (opts.add_special && s.v.add_bos && s.v.bos)
        out.push_back(*s.v.bos);
    bool after_special = true;
    std::size_t start = 0;
    std::size_t literal = 0; // the first literal span that does not end before pos
    // Leftmost-longest match of special-token text; the text between matches goes to the model.
    for (std::size_t pos = 0; pos < text.size();) {
        const auto& bucket = s.specials[static_cast<unsigned char>(text[pos])];
        const special_entry* hit = nullptr;
        while (literal < opts.literal_spans.size() && opts.literal_spans[literal].second <= pos)
            ++literal;
        for (const special_entry& e : bucket) {
            // A control token may not overlap a literal span.
            const bool control_ok = opts.parse_special && (literal == opts.literal_spans.size() ||
                                                           opts.literal_spans[literal].first >= pos + e.text.size());
            if ((!e.control || control_ok) && text.compare(pos, e.text.size(), e.text) == 0) {
                hit = &e;
                break;
            }
        }
        if (!hit) {
            ++pos;
            continue;
        }
        encode_text(text.substr(start, pos - start), after_special, out);
        out.push_back(hit->id);
        after_special = true;
        pos += hit->text.size();
        start = pos;
    }
    encode_text(text.substr(start), after_special, out);
    if (opts.add_special && s.v.add_eos && s.v.eos)
        out.push_back(*s.v.eos);
}

std::vector<token_id> tokenizer::encode(std::string_view text, const encode_options& opts) const {
    std::vector<token_id> out;
    encode(text, opts, out);
    return out;
}

std::string_view tokenizer::piece(token_id id, bool skip_special) const {
    const state& s = *state_;
    if (id < 0 || static_cast<std::size_t>(id) >= s.pieces.size())
        return {};
    if (skip_special && s.type_of(id) == token_type::control)
        return {};
    return s.pieces[static_cast<std::size_t>(id)];
}

std::string tokenizer::decode(std::span<const token_id> ids, const decode_options& opts) const {
    const state& s = *state_;
    std::string out;
    bool strip = s.v.model == model_kind::spm && s.v.add_space_prefix && opts.strip_space_prefix;
    for (const token_id id : ids) {
        std::string_view p = piece(id, opts.skip_special);
        if (p.empty())
            continue;
        // Hugging Face's Strip decoder (rank_merges vocabularies) cuts the space off the whole decoded text,
        // so a leading control token ends the stripping; llama.cpp strips the first text piece after it.
        if (strip && (s.v.rank_merges || s.type_of(id) != token_type::control)) {
            if (p.front() == ' ')
                p.remove_prefix(1);
            strip = false;
        }
        out += p;
    }
    return out;
}

const std::string& tokenizer::token_text(token_id id) const {
    static const std::string empty;
    const state& s = *state_;
    if (id < 0 || static_cast<std::size_t>(id) >= s.v.tokens.size())
        return empty;
    return s.v.tokens[static_cast<std::size_t>(id)];
}

std::optional<token_id> tokenizer::find(std::string_view text) const {
    const auto it = state_->text_to_id.find(std::string(text));
    if (it == state_->text_to_id.end())
        return std::nullopt;
    return it->second;
}

bool tokenizer::is_end_of_generation(token_id id) const {
    return std::binary_search(state_->eog.begin(), state_->eog.end(), id);
}

std::span<const token_id> tokenizer::end_of_generation() const {
    return state_->eog;
}

bool tokenizer::is_control(token_id id) const {
    return id >= 0 && static_cast<std::size_t>(id) < size() && state_->type_of(id) == token_type::control;
}

const std::vector<std::string>& tokenizer::control_texts() const {
    return state_->control_texts;
}

std::size_t tokenizer::size() const {
    return state_->v.tokens.size();
}

const vocab& tokenizer::description() const {
    return state_->v;
}

} // namespace sluice::tokenizer
