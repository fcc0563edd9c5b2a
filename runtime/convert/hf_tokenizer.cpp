// tokenizer.json to tokenizer.ggml.* metadata: the runtime's own tokenizer.json loader reads the vocabulary,
// this file renders it the way llama.cpp's converter does and checks it reads back the same.
#include "runtime/convert/hf_tokenizer.hpp"

#include "runtime/convert/text_file.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <boost/json.hpp>

#include <unordered_map>

namespace sluice::convert {

namespace json = boost::json;
namespace tk = tokenizer;

namespace {

/// The tokenizer.ggml.pre name llama.cpp gives each family.
std::string_view pre_name(tk::pre_tokenizer_kind kind) {
    using k = tk::pre_tokenizer_kind;
    switch (kind) {
    case k::none:
        return "default";
    case k::gpt2:
        return "gpt-2";
    case k::llama3:
        return "llama-bpe";
    case k::qwen2:
        return "qwen2";
    case k::deepseek_llm:
        return "deepseek-llm";
    case k::deepseek_coder:
        return "deepseek-coder";
    case k::deepseek_v3:
        return "deepseek-v3";
    case k::starcoder:
        return "starcoder";
    case k::gpt_oss:
        return "gpt-4o";
    case k::qwen35:
        return "qwen35";
    case k::kimi_k2:
        return "kimi-k2";
    }
    return "default";
}

/// The file's content, or an empty string when it does not exist.
result<std::string> read_optional_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        return std::string();
    }
    return read_text_file(path);
}

json::object parse_object(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    return !ec && v.is_object() ? std::move(v.get_object()) : json::object();
}

std::optional<tk::token_id> find_token(const tk::vocab& v, std::string_view text) {
    for (std::size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.tokens[i] == text) {
            return static_cast<tk::token_id>(i);
        }
    }
    return std::nullopt;
}

/// add_bos/add_eos from a TemplateProcessing post-processor (alone or in a Sequence), as llama.cpp reads it,
/// unless tokenizer_config.json sets add_bos_token/add_eos_token itself.
void read_post_processor(const json::object& root, const json::object& config, tk::vocab& v) {
    const auto* post = root.if_contains("post_processor");
    const json::object* tmpl = nullptr;
    if (post && post->is_object()) {
        const auto& p = post->get_object();
        const auto* type = p.if_contains("type");
        if (type && type->is_string() && type->get_string() == "TemplateProcessing") {
            tmpl = &p;
        } else if (const auto* list = p.if_contains("processors"); list && list->is_array()) {
            for (const auto& item : list->get_array()) {
                const auto* t = item.is_object() ? item.get_object().if_contains("type") : nullptr;
                if (t && t->is_string() && t->get_string() == "TemplateProcessing") {
                    tmpl = &item.get_object();
                }
            }
        }
    }
    const auto* single = tmpl ? tmpl->if_contains("single") : nullptr;
    if (single == nullptr || !single->is_array() || single->get_array().empty()) {
        return;
    }
    auto special_id = [&](const json::value& item) -> std::optional<tk::token_id> {
        const auto* s = item.is_object() ? item.get_object().if_contains("SpecialToken") : nullptr;
        const auto* id = s && s->is_object() ? s->get_object().if_contains("id") : nullptr;
        return id && id->is_string() ? find_token(v, id->get_string()) : std::nullopt;
    };
    const auto& items = single->get_array();
    if (!config.contains("add_bos_token")) {
        if (auto first = special_id(items.front())) {
            v.add_bos = true;
            v.bos = v.bos.value_or(*first);
        }
    }
    if (!config.contains("add_eos_token") && items.size() > 1) {
        if (auto last = special_id(items.back())) {
            v.add_eos = true;
            v.eos = v.eos.value_or(*last);
        }
    }
}

/// Special ids tokenizer_config.json does not name, from config.json's *_token_id fields.
void read_model_config_ids(const json::object& config, tk::vocab& v) {
    const std::pair<std::string_view, std::optional<tk::token_id>*> slots[] = {
        {"bos_token_id", &v.bos}, {"eos_token_id", &v.eos}, {"pad_token_id", &v.pad}};
    for (const auto& [key, slot] : slots) {
        const auto* id = config.if_contains(key);
        if (!*slot && id && id->is_int64() && id->get_int64() >= 0 &&
            id->get_int64() < static_cast<std::int64_t>(v.tokens.size())) {
            *slot = static_cast<tk::token_id>(id->get_int64());
        }
    }
}

/// Fills id gaps and pads to `n_vocab` with "[PAD{i}]" tokens of type unused.
result<void> pad_vocab(tk::vocab& v, std::uint32_t n_vocab) {
    if (n_vocab != 0 && v.tokens.size() > n_vocab) {
        return make_error(std::errc::invalid_argument, "tokenizer.json: " + std::to_string(v.tokens.size()) +
                                                           " tokens, more than the model's vocab_size " +
                                                           std::to_string(n_vocab));
    }
    const std::size_t size = std::max<std::size_t>(n_vocab, v.tokens.size());
    v.types.resize(v.tokens.size(), tk::token_type::normal);
    v.tokens.resize(size);
    v.types.resize(size, tk::token_type::unused);
    for (std::size_t i = 0; i < size; ++i) {
        if (v.tokens[i].empty()) {
            v.tokens[i] = "[PAD" + std::to_string(i) + "]";
            v.types[i] = tk::token_type::unused;
        }
    }
    return {};
}

/// SentencePiece merges the adjacent pair whose result scores highest; Hugging Face's BPE merges the pair of
/// lowest merge rank. Scoring each piece by minus the rank of the first merge that makes it gives the same
/// order (pieces no merge makes, and single characters, score below every merge).
std::vector<float> spm_scores(const tk::vocab& v) {
    std::unordered_map<std::string, std::size_t> id_of;
    id_of.reserve(v.tokens.size());
    for (std::size_t i = 0; i < v.tokens.size(); ++i) {
        id_of.emplace(v.tokens[i], i);
    }
    const auto n_merges = static_cast<float>(v.merges.size());
    std::vector<float> scores(v.tokens.size());
    for (std::size_t i = 0; i < scores.size(); ++i) {
        scores[i] = v.types[i] == tk::token_type::normal ? -(n_merges + static_cast<float>(i)) : 0.0f;
    }
    std::vector<bool> seen(v.tokens.size(), false);
    for (std::size_t rank = 0; rank < v.merges.size(); ++rank) {
        const auto it = id_of.find(v.merges[rank].first + v.merges[rank].second);
        if (it != id_of.end() && !seen[it->second]) {
            seen[it->second] = true;
            scores[it->second] = -static_cast<float>(rank);
        }
    }
    return scores;
}

void set_metadata(const tk::vocab& v, gguf::metadata& kv) {
    const bool spm = v.model == tk::model_kind::spm;
    kv.set_string(gguf::keys::tokenizer_model, spm ? "llama" : "gpt2");
    kv.set_string(gguf::keys::tokenizer_pre, std::string(pre_name(spm ? tk::pre_tokenizer_kind::none : v.pre)));
    kv.set_array(gguf::keys::tokenizer_tokens, v.tokens);
    if (spm) {
        kv.set_array(gguf::keys::tokenizer_scores, spm_scores(v));
    }
    std::vector<std::int32_t> types;
    types.reserve(v.types.size());
    for (const auto t : v.types) {
        types.push_back(static_cast<std::int32_t>(t));
    }
    kv.set_array(gguf::keys::tokenizer_token_type, std::move(types));
    if (!spm) {
        std::vector<std::string> merges;
        merges.reserve(v.merges.size());
        for (const auto& [a, b] : v.merges) {
            merges.push_back(a + " " + b);
        }
        kv.set_array(gguf::keys::tokenizer_merges, std::move(merges));
    }
    const std::pair<std::string_view, std::optional<tk::token_id>> ids[] = {
        {gguf::keys::tokenizer_bos_id, v.bos},
        {gguf::keys::tokenizer_eos_id, v.eos},
        {"tokenizer.ggml.unknown_token_id", v.unk},
        {"tokenizer.ggml.padding_token_id", v.pad},
    };
    for (const auto& [key, id] : ids) {
        if (id) {
            kv.set_u32(key, static_cast<std::uint32_t>(*id));
        }
    }
    kv.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    kv.set_bool("tokenizer.ggml.add_eos_token", v.add_eos);
    if (spm) {
        kv.set_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
    }
    if (!v.chat_template.empty()) {
        kv.set_string(gguf::keys::chat_template, v.chat_template);
    }
}

/// GGUF has no key for the normalizer or ignore_merges: the reader infers them from the family. Refuse a
/// tokenizer whose rules would read back differently.
result<void> check_round_trip(const tk::vocab& v, const gguf::metadata& kv) {
    auto back = tk::vocab_from_gguf(kv);
    if (!back) {
        return back.error().with_context("tokenizer.json: the written metadata does not load");
    }
    const std::string family = *kv.find(gguf::keys::tokenizer_pre)->as_string();
    if (back->normalizer != v.normalizer) {
        return make_error(std::errc::not_supported,
                          "tokenizer.json: the normalizer cannot be recorded in GGUF for pre-tokenizer " + family);
    }
    if (v.model == tk::model_kind::bpe && back->ignore_merges != v.ignore_merges) {
        return make_error(std::errc::not_supported, "tokenizer.json: model.ignore_merges " +
                                                        std::string(v.ignore_merges ? "true" : "false") +
                                                        " cannot be recorded in GGUF for pre-tokenizer " + family);
    }
    return {};
}

} // namespace

result<void> write_hf_tokenizer(const std::filesystem::path& dir, std::uint32_t n_vocab, gguf::metadata& kv) {
    std::error_code exists_ec;
    const bool tiktoken = !std::filesystem::exists(dir / "tokenizer.json", exists_ec) &&
                          std::filesystem::exists(dir / "tiktoken.model", exists_ec);
    auto tokenizer_json = read_text_file(dir / (tiktoken ? "tiktoken.model" : "tokenizer.json"));
    if (!tokenizer_json) {
        return tokenizer_json.error();
    }
    auto config_json = read_optional_file(dir / "tokenizer_config.json");
    auto model_config = read_optional_file(dir / "config.json");
    auto jinja = read_optional_file(dir / "chat_template.jinja");
    for (const auto* r : {&config_json, &model_config, &jinja}) {
        if (!*r) {
            return r->error();
        }
    }
    // Kimi-K2 ships tiktoken.model instead of tokenizer.json.
    auto v = tiktoken ? tk::vocab_from_tiktoken(*tokenizer_json, *config_json)
                      : tk::vocab_from_hf_json(*tokenizer_json, *config_json);
    if (!v) {
        return v.error();
    }
    if (!tiktoken) {
        read_post_processor(parse_object(*tokenizer_json), parse_object(*config_json), *v);
    }
    read_model_config_ids(parse_object(*model_config), *v);
    if (v->chat_template.empty()) {
        v->chat_template = std::move(*jinja);
    }
    if (auto r = pad_vocab(*v, n_vocab); !r) {
        return r;
    }
    set_metadata(*v, kv);
    return check_round_trip(*v, kv);
}

} // namespace sluice::convert
