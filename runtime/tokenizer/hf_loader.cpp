// The Hugging Face adapter: tokenizer.json (+ tokenizer_config.json) to the neutral vocabulary description.
#include "runtime/tokenizer/loaders.hpp"

#include <boost/json.hpp>

#include <cctype>

namespace sluice::tokenizer {
namespace {

namespace json = boost::json;

constexpr std::string_view llama3_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view qwen2_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view qwen35_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view gpt_oss_marker = R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)";
constexpr std::string_view deepseek_v3_marker = R"(?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+)";

std::string_view str_or_empty(const json::value* v) {
    if (v == nullptr || !v->is_string())
        return {};
    return v->get_string();
}

/// Flattens a pre_tokenizer (possibly a Sequence) into its steps.
void flatten(const json::value& v, std::vector<const json::object*>& steps) {
    if (!v.is_object())
        return;
    const auto& o = v.get_object();
    if (str_or_empty(o.if_contains("type")) == "Sequence") {
        if (const auto* list = o.if_contains("pretokenizers"); list && list->is_array()) {
            for (const auto& item : list->get_array())
                flatten(item, steps);
        }
        return;
    }
    steps.push_back(&o);
}

result<pre_tokenizer_kind> detect_pre_tokenizer(const json::value& pre) {
    std::vector<const json::object*> steps;
    flatten(pre, steps);
    std::vector<std::string_view> splits;
    bool digits = false;
    bool byte_level_regex = false;
    for (const json::object* s : steps) {
        const std::string_view type = str_or_empty(s->if_contains("type"));
        if (type == "Split") {
            const auto* pattern = s->if_contains("pattern");
            if (pattern && pattern->is_object())
                splits.push_back(str_or_empty(pattern->get_object().if_contains("Regex")));
        } else if (type == "Digits") {
            digits = true;
        } else if (type == "ByteLevel") {
            const auto* use = s->if_contains("use_regex");
            byte_level_regex = use == nullptr || (use->is_bool() && use->get_bool());
        }
    }
    using k = pre_tokenizer_kind;
    if (splits.size() == 1 && splits[0] == llama3_pattern)
        return k::llama3;
    if (splits.size() == 1 && splits[0] == qwen2_pattern)
        return k::qwen2;
    if (splits.size() == 1 && splits[0] == qwen35_pattern)
        return k::qwen35;
    if (splits.size() == 1 && splits[0].find(gpt_oss_marker) != std::string_view::npos)
        return k::gpt_oss;
    if (splits.size() == 3 && splits[0] == R"(\p{N}{1,3})" &&
        splits[2].find(deepseek_v3_marker) != std::string_view::npos) {
        return k::deepseek_v3;
    }
    if (splits.empty() && byte_level_regex)
        return digits ? k::starcoder : k::gpt2;
    return make_error(std::errc::not_supported,
                      "pre_tokenizer " + json::serialize(pre).substr(0, 300) + " is not supported");
}

/// Reads `normalizer`: null, NFC, or a Sequence of those (possibly empty or nested). Any other normalizer
/// changes the text in ways we do not reproduce, so it is an error rather than silently skipped.
result<normalizer_kind> read_normalizer(const json::value& n) {
    if (n.is_null())
        return normalizer_kind::none;
    const std::string_view type = n.is_object() ? str_or_empty(n.get_object().if_contains("type")) : "";
    if (type == "NFC")
        return normalizer_kind::nfc;
    if (type == "Sequence") {
        const auto* list = n.get_object().if_contains("normalizers");
        if (list != nullptr && list->is_array()) {
            auto kind = normalizer_kind::none;
            for (const auto& item : list->get_array()) {
                auto k = read_normalizer(item);
                if (!k)
                    return k;
                if (*k == normalizer_kind::nfc)
                    kind = normalizer_kind::nfc; // NFC is idempotent: NFC twice is NFC
            }
            return kind;
        }
    }
    return make_error(std::errc::not_supported,
                      "normalizer " + json::serialize(n).substr(0, 300) + " is not supported");
}

std::string_view token_content(const json::value* v) {
    if (v == nullptr)
        return {};
    if (v->is_string())
        return v->get_string();
    if (v->is_object())
        return str_or_empty(v->get_object().if_contains("content"));
    return {};
}

result<void> read_model(const json::object& model, vocab& v) {
    if (str_or_empty(model.if_contains("type")) != "BPE") {
        return make_error(std::errc::not_supported, "only BPE tokenizer.json models are supported");
    }
    const auto* vocab_obj = model.if_contains("vocab");
    if (vocab_obj == nullptr || !vocab_obj->is_object())
        return make_error(std::errc::bad_message, "model.vocab missing");
    for (const auto& [text, id] : vocab_obj->get_object()) {
        if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() > (1 << 30)) {
            return make_error(std::errc::bad_message, "model.vocab: bad id for '" + std::string(text) + "'");
        }
        const auto i = static_cast<std::size_t>(id.get_int64());
        if (i >= v.tokens.size())
            v.tokens.resize(i + 1);
        v.tokens[i] = std::string(text);
    }
    if (const auto* merges = model.if_contains("merges"); merges && merges->is_array()) {
        v.merges.reserve(merges->get_array().size());
        for (const auto& m : merges->get_array()) {
            if (m.is_string()) {
                const std::string_view s = m.get_string();
                const auto sp = s.find(' ', 1);
                if (sp == std::string_view::npos)
                    return make_error(std::errc::bad_message, "model.merges: bad entry");
                v.merges.emplace_back(std::string(s.substr(0, sp)), std::string(s.substr(sp + 1)));
            } else if (m.is_array() && m.get_array().size() == 2) {
                v.merges.emplace_back(std::string(str_or_empty(&m.get_array()[0])),
                                      std::string(str_or_empty(&m.get_array()[1])));
            } else {
                return make_error(std::errc::bad_message, "model.merges: bad entry");
            }
        }
    }
    const auto* fallback = model.if_contains("byte_fallback");
    if (fallback && fallback->is_bool() && fallback->get_bool()) {
        const auto* fuse = model.if_contains("fuse_unk");
        if (fuse == nullptr || !fuse->is_bool() || !fuse->get_bool())
            return make_error(std::errc::not_supported, "byte_fallback BPE without fuse_unk is not supported");
        v.model = model_kind::spm; // characters, <0xAB> fallback, U+2581 for spaces: SentencePiece's shape
        v.rank_merges = true;
    }
    const auto* ignore = model.if_contains("ignore_merges");
    v.ignore_merges = ignore && ignore->is_bool() && ignore->get_bool();
    return {};
}

result<void> read_added_tokens(const json::object& root, vocab& v) {
    v.types.assign(v.tokens.size(), token_type::normal);
    const auto* added = root.if_contains("added_tokens");
    if (added == nullptr || !added->is_array())
        return {};
    for (const auto& t : added->get_array()) {
        if (!t.is_object())
            continue;
        const auto& o = t.get_object();
        const auto* id = o.if_contains("id");
        if (id == nullptr || !id->is_int64() || id->get_int64() < 0 || id->get_int64() > (1 << 30)) {
            return make_error(std::errc::bad_message, "added_tokens: bad id");
        }
        const auto i = static_cast<std::size_t>(id->get_int64());
        if (i >= v.tokens.size()) {
            v.tokens.resize(i + 1);
            v.types.resize(i + 1, token_type::unused);
        }
        v.tokens[i] = std::string(str_or_empty(o.if_contains("content")));
        const auto* special = o.if_contains("special");
        v.types[i] =
            special && special->is_bool() && special->get_bool() ? token_type::control : token_type::user_defined;
    }
    return {};
}

void read_config(const json::object& cfg, vocab& v) {
    auto id_of = [&](std::string_view key) -> std::optional<token_id> {
        const std::string_view text = token_content(cfg.if_contains(key));
        if (text.empty())
            return std::nullopt;
        for (std::size_t i = 0; i < v.tokens.size(); ++i) {
            if (v.tokens[i] == text)
                return static_cast<token_id>(i);
        }
        return std::nullopt;
    };
    v.bos = id_of("bos_token");
    v.eos = id_of("eos_token");
    v.pad = id_of("pad_token");
    v.unk = id_of("unk_token");
    if (const auto* b = cfg.if_contains("add_bos_token"); b && b->is_bool())
        v.add_bos = b->get_bool();
    if (const auto* e = cfg.if_contains("add_eos_token"); e && e->is_bool())
        v.add_eos = e->get_bool();
    const auto* t = cfg.if_contains("chat_template");
    if (t && t->is_string())
        v.chat_template = std::string(t->get_string());
    if (t && t->is_array()) { // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
        for (const auto& item : t->get_array()) {
            if (item.is_object() && str_or_empty(item.get_object().if_contains("name")) == "default") {
                v.chat_template = std::string(str_or_empty(item.get_object().if_contains("template")));
            }
        }
    }
}

constexpr std::string_view metaspace = "\xE2\x96\x81"; // U+2581

bool is_replace(const json::value& n, std::string_view from, std::string_view to) {
    if (!n.is_object() || str_or_empty(n.get_object().if_contains("type")) != "Replace")
        return false;
    const auto* pattern = n.get_object().if_contains("pattern");
    return pattern && pattern->is_object() && str_or_empty(pattern->get_object().if_contains("String")) == from &&
           str_or_empty(n.get_object().if_contains("content")) == to;
}

std::string unsupported(std::string_view what, const json::value& v) {
    return std::string(what) + " " + json::serialize(v).substr(0, 300) + " is not supported for byte_fallback BPE";
}

/// Reads the normalizer of a SentencePiece-style BPE model: Sequence[Prepend("▁"), Replace(" ", "▁")], the
/// Llama 2 / Mistral shape, which is exactly the space prefix and escaping of `model_kind::spm`.
result<void> read_spm_normalizer(const json::value& n, vocab& v) {
    const auto* list = n.is_object() ? n.get_object().if_contains("normalizers") : nullptr;
    if (str_or_empty(n.is_object() ? n.get_object().if_contains("type") : nullptr) != "Sequence" || !list ||
        !list->is_array() || list->get_array().size() != 2) {
        return make_error(std::errc::not_supported, unsupported("normalizer", n));
    }
    const json::value& first = list->get_array()[0];
    const bool prepend = first.is_object() && str_or_empty(first.get_object().if_contains("type")) == "Prepend" &&
                         str_or_empty(first.get_object().if_contains("prepend")) == metaspace;
    if (!prepend || !is_replace(list->get_array()[1], " ", metaspace))
        return make_error(std::errc::not_supported, unsupported("normalizer", n));
    v.add_space_prefix = true;
    v.normalizer = normalizer_kind::none;
    v.pre = pre_tokenizer_kind::none;
    return {};
}

/// Checks the decoder of a SentencePiece-style BPE model: Replace("▁", " "), ByteFallback, Fuse and
/// Strip(" ", 1, 0) are what `model_kind::spm` decoding does (the strip undoes the prepended space).
result<void> check_spm_decoder(const json::value& d) {
    const auto* list = d.is_object() ? d.get_object().if_contains("decoders") : nullptr;
    if (list == nullptr || !list->is_array() || list->get_array().size() != 4)
        return make_error(std::errc::not_supported, unsupported("decoder", d));
    const auto& steps = list->get_array();
    auto type_of = [&](std::size_t i) {
        return str_or_empty(steps[i].is_object() ? steps[i].get_object().if_contains("type") : nullptr);
    };
    const bool ok = is_replace(steps[0], metaspace, " ") && type_of(1) == "ByteFallback" && type_of(2) == "Fuse" &&
                    type_of(3) == "Strip" && str_or_empty(steps[3].get_object().if_contains("content")) == " " &&
                    steps[3].get_object().if_contains("start") && *steps[3].get_object().if_contains("start") == 1 &&
                    steps[3].get_object().if_contains("stop") && *steps[3].get_object().if_contains("stop") == 0;
    if (!ok)
        return make_error(std::errc::not_supported, unsupported("decoder", d));
    return {};
}

/// Normalizer, pre-tokenizer, decoder and byte-token types of a byte_fallback BPE model.
result<void> read_spm_pipeline(const json::object& obj, vocab& v) {
    const json::value null;
    const auto* pre = obj.if_contains("pre_tokenizer");
    if (pre != nullptr && !pre->is_null())
        return make_error(std::errc::not_supported, unsupported("pre_tokenizer", *pre));
    const auto* normalizer = obj.if_contains("normalizer");
    if (auto r = read_spm_normalizer(normalizer ? *normalizer : null, v); !r)
        return r;
    const auto* decoder = obj.if_contains("decoder");
    if (auto r = check_spm_decoder(decoder ? *decoder : null); !r)
        return r;
    for (std::size_t i = 0; i < v.tokens.size(); ++i) {
        const std::string& t = v.tokens[i];
        if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>' &&
            std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4])) &&
            v.types[i] == token_type::normal) {
            v.types[i] = token_type::byte;
        }
    }
    return {};
}

/// Pre-tokenizer and normalizer of a byte-level BPE model.
result<void> read_byte_level_pipeline(const json::object& obj, vocab& v) {
    const auto* pre = obj.if_contains("pre_tokenizer");
    auto kind = detect_pre_tokenizer(pre ? *pre : json::value());
    if (!kind)
        return kind.error();
    v.pre = *kind;
    const auto* normalizer = obj.if_contains("normalizer");
    auto norm = read_normalizer(normalizer ? *normalizer : json::value());
    if (!norm)
        return norm.error();
    v.normalizer = *norm;
    return {};
}

} // namespace

result<vocab> vocab_from_hf_json(std::string_view tokenizer_json, std::string_view config_json) {
    boost::system::error_code ec;
    const json::value root = json::parse(tokenizer_json, ec);
    if (ec || !root.is_object())
        return make_error(std::errc::bad_message, "tokenizer.json: " + ec.message());
    const auto& obj = root.get_object();
    vocab v;
    v.model = model_kind::bpe;
    const auto* model = obj.if_contains("model");
    if (model == nullptr || !model->is_object())
        return make_error(std::errc::bad_message, "tokenizer.json: no model");
    if (auto r = read_model(model->get_object(), v); !r)
        return r.error().with_context("tokenizer.json");
    if (auto r = read_added_tokens(obj, v); !r)
        return r.error().with_context("tokenizer.json");
    auto pipeline = v.model == model_kind::spm ? read_spm_pipeline(obj, v) : read_byte_level_pipeline(obj, v);
    if (!pipeline)
        return pipeline.error().with_context("tokenizer.json");
    if (!config_json.empty()) {
        const json::value cfg = json::parse(config_json, ec);
        if (ec || !cfg.is_object())
            return make_error(std::errc::bad_message, "tokenizer_config.json: " + ec.message());
        read_config(cfg.get_object(), v);
    }
    return v;
}

} // namespace sluice::tokenizer
