// The GGUF adapter: tokenizer.ggml.* metadata to the neutral vocabulary description.
#include "runtime/gguf/metadata.hpp"
#include "runtime/tokenizer/loaders.hpp"

namespace sluice::tokenizer {
namespace {

result<std::optional<token_id>> optional_id(const gguf::metadata& kv, std::string_view key) {
    auto v = kv.find_u32(key);
    if (!v)
        return v.error();
    if (!*v)
        return std::optional<token_id>{};
    return std::optional<token_id>{static_cast<token_id>(**v)};
}

result<bool> optional_bool(const gguf::metadata& kv, std::string_view key, bool fallback) {
    if (!kv.contains(key))
        return fallback;
    return kv.get_bool(key);
}

result<void> read_model_kind(const gguf::metadata& kv, vocab& v) {
    auto model = kv.get_string("tokenizer.ggml.model");
    if (!model)
        return model.error();
    if (*model == "gpt2") {
        v.model = model_kind::bpe;
    } else if (*model == "llama") {
        v.model = model_kind::spm;
    } else {
        return make_error(std::errc::not_supported, "tokenizer model '" + std::string(*model) + "' is not supported");
    }
    auto pre = kv.find_string("tokenizer.ggml.pre");
    if (!pre)
        return pre.error();
    const std::string_view pre_name = pre->value_or(v.model == model_kind::spm ? "default" : "gpt-2");
    const auto kind = pre_tokenizer_from_name(pre_name);
    if (!kind)
        return make_error(std::errc::not_supported, "pre-tokenizer '" + std::string(pre_name) + "' is not supported");
    v.pre = v.model == model_kind::spm ? pre_tokenizer_kind::none : *kind;
    if (v.model == model_kind::bpe && v.pre == pre_tokenizer_kind::none)
        v.pre = pre_tokenizer_kind::gpt2;
    v.ignore_merges = v.pre == pre_tokenizer_kind::llama3 || v.pre == pre_tokenizer_kind::gpt_oss;
    // GGUF does not record the normalizer; the Qwen2/Qwen3 tokenizer.json files these come from declare NFC.
    if (v.pre == pre_tokenizer_kind::qwen2 || v.pre == pre_tokenizer_kind::qwen35)
        v.normalizer = normalizer_kind::nfc;
    return {};
}

result<void> read_arrays(const gguf::metadata& kv, vocab& v) {
    auto tokens = kv.get_array_of_strings("tokenizer.ggml.tokens");
    if (!tokens)
        return tokens.error();
    v.tokens.assign(tokens->begin(), tokens->end());
    if (kv.contains("tokenizer.ggml.scores")) {
        auto scores = kv.get_array_of_f32("tokenizer.ggml.scores");
        if (!scores)
            return scores.error();
        v.scores.assign(scores->begin(), scores->end());
    }
    if (kv.contains("tokenizer.ggml.token_type")) {
        auto types = kv.get_array_of_i32("tokenizer.ggml.token_type");
        if (!types)
            return types.error();
        v.types.reserve(types->size());
        for (const std::int32_t t : *types) {
            v.types.push_back(t >= 0 && t <= 6 ? static_cast<token_type>(t) : token_type::undefined);
        }
    }
    if (kv.contains("tokenizer.ggml.merges")) {
        auto merges = kv.get_array_of_strings("tokenizer.ggml.merges");
        if (!merges)
            return merges.error();
        v.merges.reserve(merges->size());
        for (const std::string& m : *merges) {
            const auto sp = m.find(' ', 1);
            if (sp == std::string::npos) {
                return make_error(std::errc::bad_message, "tokenizer.ggml.merges: entry '" + m + "' has no space");
            }
            v.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
        }
    }
    return {};
}

result<void> read_specials(const gguf::metadata& kv, vocab& v) {
    struct slot {
        std::string_view key;
        std::optional<token_id>* target;
    };
    const slot slots[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos},     {"tokenizer.ggml.eos_token_id", &v.eos},
        {"tokenizer.ggml.eot_token_id", &v.eot},     {"tokenizer.ggml.eom_token_id", &v.eom},
        {"tokenizer.ggml.unknown_token_id", &v.unk}, {"tokenizer.ggml.padding_token_id", &v.pad},
    };
    for (const slot& s : slots) {
        auto id = optional_id(kv, s.key);
        if (!id)
            return id.error();
        *s.target = *id;
    }
    auto add_bos = optional_bool(kv, "tokenizer.ggml.add_bos_token", v.model == model_kind::spm);
    auto add_eos = optional_bool(kv, "tokenizer.ggml.add_eos_token", false);
    auto add_space = optional_bool(kv, "tokenizer.ggml.add_space_prefix", v.model == model_kind::spm);
    if (!add_bos)
        return add_bos.error();
    if (!add_eos)
        return add_eos.error();
    if (!add_space)
        return add_space.error();
    v.add_bos = *add_bos;
    v.add_eos = *add_eos;
    v.add_space_prefix = *add_space;
    auto tmpl = kv.find_string("tokenizer.chat_template");
    if (!tmpl)
        return tmpl.error();
    if (*tmpl)
        v.chat_template = std::string(**tmpl);
    return {};
}

} // namespace

result<vocab> vocab_from_gguf(const gguf::metadata& kv) {
    vocab v;
    if (auto r = read_model_kind(kv, v); !r)
        return r.error();
    if (auto r = read_arrays(kv, v); !r)
        return r.error();
    if (auto r = read_specials(kv, v); !r)
        return r.error();
    return v;
}

} // namespace sluice::tokenizer
