// Kimi-K2's tokenizer as its Hugging Face folder ships it: tiktoken.model (one "base64(token bytes) rank" line
// per token) plus tokenizer_config.json (special tokens, chat template). The ranks become a byte-level BPE
// vocabulary: token text in the GPT-2 byte map, and for every multi-byte token the merge that tiktoken's
// rank-ordered merging makes it from (the pair that rank-limited BPE of its bytes ends with).
#include "runtime/tokenizer/byte_level.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string>
#include <unordered_map>

namespace sluice::tokenizer {

namespace {

namespace json = boost::json;

result<std::string> base64_decode(std::string_view in) {
    static const std::array<std::int8_t, 256> table = [] {
        std::array<std::int8_t, 256> t{};
        t.fill(-1);
        const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (std::size_t i = 0; i < alphabet.size(); ++i) {
            t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
        }
        return t;
    }();
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : in) {
        if (c == '=') {
            break;
        }
        const int v = table[static_cast<unsigned char>(c)];
        if (v < 0) {
            return make_error(std::errc::bad_message, "not base64");
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xFF));
        }
    }
    return out;
}

/// The (left, right) split that BPE with ranks below `max_rank` ends with for `token`; empty when the bytes
/// do not merge down to two parts.
std::pair<std::string, std::string> last_merge(const std::unordered_map<std::string, std::uint32_t>& rank,
                                               const std::string& token, std::uint32_t max_rank) {
    std::vector<std::string> parts;
    for (const char c : token) {
        parts.emplace_back(1, c);
    }
    while (parts.size() > 2) {
        std::size_t best = parts.size();
        std::uint32_t best_rank = max_rank;
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
            const auto it = rank.find(parts[i] + parts[i + 1]);
            if (it != rank.end() && it->second < best_rank) {
                best_rank = it->second;
                best = i;
            }
        }
        if (best == parts.size()) {
            return {};
        }
        parts[best] += parts[best + 1];
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    const auto below = [&](const std::string& part) {
        const auto it = rank.find(part);
        return it != rank.end() && it->second < max_rank;
    };
    if (parts.size() != 2 || !below(parts[0]) || !below(parts[1])) {
        return {};
    }
    return {parts[0], parts[1]};
}

std::string to_byte_level(std::string_view bytes) {
    std::string s;
    append_byte_level(s, bytes);
    return s;
}

/// tokenizer_config.json's added_tokens_decoder ({"163584": {"content": "[BOS]", "special": true}, ...}),
/// special-token names, add_bos/add_eos and the chat template.
result<void> read_tiktoken_config(const json::object& cfg, vocab& v) {
    if (const auto* added = cfg.if_contains("added_tokens_decoder"); added && added->is_object()) {
        for (const auto& [key, item] : added->get_object()) {
            std::size_t id = 0;
            const auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
            const auto* content = item.is_object() ? item.get_object().if_contains("content") : nullptr;
            if (ec != std::errc{} || p != key.data() + key.size() || id > (1u << 24) || !content ||
                !content->is_string()) {
                return make_error(std::errc::bad_message, "tokenizer_config.json: added_tokens_decoder entry " +
                                                              std::string(key) + " is malformed");
            }
            if (id >= v.tokens.size()) {
                v.tokens.resize(id + 1);
                v.types.resize(id + 1, token_type::unused);
            }
            v.tokens[id] = std::string(content->get_string());
            const auto* special = item.get_object().if_contains("special");
            v.types[id] =
                special && special->is_bool() && !special->get_bool() ? token_type::user_defined : token_type::control;
        }
    }
    const auto id_of = [&](std::string_view key) -> std::optional<token_id> {
        const auto* t = cfg.if_contains(key);
        std::string_view text;
        if (t && t->is_string()) {
            text = t->get_string();
        } else if (t && t->is_object() && t->get_object().if_contains("content") &&
                   t->get_object().at("content").is_string()) {
            text = t->get_object().at("content").get_string();
        }
        for (std::size_t i = 0; !text.empty() && i < v.tokens.size(); ++i) {
            if (v.tokens[i] == text && v.types[i] != token_type::normal) {
                return static_cast<token_id>(i);
            }
        }
        return std::nullopt;
    };
    v.bos = id_of("bos_token");
    v.eos = id_of("eos_token");
    v.pad = id_of("pad_token");
    v.unk = id_of("unk_token");
    if (const auto* b = cfg.if_contains("add_bos_token"); b && b->is_bool()) {
        v.add_bos = b->get_bool();
    }
    if (const auto* e = cfg.if_contains("add_eos_token"); e && e->is_bool()) {
        v.add_eos = e->get_bool();
    }
    if (const auto* t = cfg.if_contains("chat_template"); t && t->is_string()) {
        v.chat_template = std::string(t->get_string());
    }
    return {};
}

} // namespace

result<vocab> vocab_from_tiktoken(std::string_view model_text, std::string_view config_json) {
    vocab v;
    v.model = model_kind::bpe;
    v.pre = pre_tokenizer_kind::kimi_k2;
    std::unordered_map<std::string, std::uint32_t> rank;
    std::vector<std::string> by_rank;
    std::size_t line_no = 0;
    for (std::size_t pos = 0; pos < model_text.size();) {
        const std::size_t nl = std::min(model_text.find('\n', pos), model_text.size());
        const std::string_view line = model_text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        if (line.empty()) {
            continue;
        }
        const std::size_t sp = line.find(' ');
        std::uint32_t r = 0;
        const std::string_view num = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
        const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), r);
        auto bytes = base64_decode(line.substr(0, sp));
        if (sp == std::string_view::npos || ec != std::errc{} || p != num.data() + num.size() || !bytes ||
            bytes->empty() || r > (1u << 24) || rank.contains(*bytes)) {
            return make_error(std::errc::bad_message, "tiktoken.model: line " + std::to_string(line_no) +
                                                          " is not 'base64 rank' with a new token and rank");
        }
        if (r >= by_rank.size()) {
            by_rank.resize(r + 1);
        }
        if (!by_rank[r].empty()) {
            return make_error(std::errc::bad_message, "tiktoken.model: rank " + std::to_string(r) +
                                                          " appears twice (line " + std::to_string(line_no) + ")");
        }
        by_rank[r] = *bytes;
        rank.emplace(std::move(*bytes), r);
    }
    if (rank.empty()) {
        return make_error(std::errc::bad_message, "tiktoken.model: no tokens");
    }
    v.tokens.resize(by_rank.size());
    v.types.assign(by_rank.size(), token_type::normal);
    for (std::uint32_t r = 0; r < by_rank.size(); ++r) {
        if (by_rank[r].empty()) {
            v.types[r] = token_type::unused;
            continue;
        }
        v.tokens[r] = to_byte_level(by_rank[r]);
        if (by_rank[r].size() < 2) {
            continue;
        }
        auto [left, right] = last_merge(rank, by_rank[r], r);
        if (left.empty()) {
            return make_error(std::errc::bad_message, "tiktoken.model: token of rank " + std::to_string(r) +
                                                          " cannot be made by merging lower-ranked tokens");
        }
        v.merges.emplace_back(to_byte_level(left), to_byte_level(right));
    }
    boost::system::error_code ec;
    const json::value cfg = config_json.empty() ? json::value(json::object{}) : json::parse(config_json, ec);
    if (ec || !cfg.is_object()) {
        return make_error(std::errc::bad_message, "tokenizer_config.json: not a JSON object");
    }
    if (auto r = read_tiktoken_config(cfg.get_object(), v); !r) {
        return r.error();
    }
    for (std::size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.tokens[i].empty()) {
            v.tokens[i] = "[PAD" + std::to_string(i) + "]";
            v.types[i] = token_type::unused;
        }
    }
    return v;
}

} // namespace sluice::tokenizer
