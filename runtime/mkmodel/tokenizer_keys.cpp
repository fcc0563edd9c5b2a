// Synthetic, copied and converted tokenizer metadata for generated models.
#include "runtime/mkmodel/tokenizer_keys.hpp"

#include "runtime/convert/hf_tokenizer.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/tokenizer/byte_level.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <string>
#include <system_error>
#include <vector>

namespace sluice::mkmodel {

namespace {

constexpr std::int32_t type_normal = 1;
constexpr std::int32_t type_control = 3;
constexpr std::int32_t type_unused = 5;

constexpr std::string_view chatml_template =
    "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::string byte_level(std::string_view bytes) {
    std::string out;
    tokenizer::append_byte_level(out, bytes);
    return out;
}

/// Token texts and merges of the synthetic vocabulary, filled until `room` merged tokens exist.
struct merged_tokens {
    std::vector<std::string> tokens;
    std::vector<std::string> merges;
    std::size_t room;

    bool add(const std::string& left, const std::string& right) {
        if (tokens.size() == room) {
            return false;
        }
        tokens.push_back(left + right);
        merges.push_back(left + " " + right);
        return true;
    }
};

/// Merges in rank order: space + letter, letter pairs, then space-led triples (" a" + "bc").
merged_tokens synthetic_merges(std::size_t room) {
    merged_tokens m{{}, {}, room};
    const std::string space = byte_level(" ");
    for (char a = 'a'; a <= 'z'; ++a) {
        if (!m.add(space, std::string(1, a))) {
            return m;
        }
    }
    for (char a = 'a'; a <= 'z'; ++a) {
        for (char b = 'a'; b <= 'z'; ++b) {
            if (!m.add(std::string(1, a), std::string(1, b))) {
                return m;
            }
        }
    }
    for (char a = 'a'; a <= 'z'; ++a) {
        for (char b = 'a'; b <= 'z'; ++b) {
            for (char c = 'a'; c <= 'z'; ++c) {
                if (!m.add(space + a, std::string{b, c})) {
                    return m;
                }
            }
        }
    }
    return m;
}

} // namespace

result<gguf::metadata> synthetic_tokenizer(std::uint32_t n_vocab) {
    if (n_vocab < min_synthetic_vocab) {
        return make_error(std::errc::invalid_argument, "the synthetic tokenizer needs a vocabulary of at least " +
                                                           std::to_string(min_synthetic_vocab) + " tokens, got " +
                                                           std::to_string(n_vocab));
    }
    std::vector<std::string> tokens;
    tokens.reserve(n_vocab);
    for (unsigned b = 0; b < 256; ++b) {
        const char c = static_cast<char>(b);
        tokens.push_back(byte_level(std::string_view(&c, 1)));
    }
    auto merged = synthetic_merges(n_vocab - min_synthetic_vocab);
    tokens.insert(tokens.end(), merged.tokens.begin(), merged.tokens.end());
    std::vector<std::int32_t> types(tokens.size(), type_normal);

    const auto eot = static_cast<std::uint32_t>(tokens.size());
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.emplace_back(special);
        types.push_back(type_control);
    }
    for (std::uint32_t i = 0; tokens.size() < n_vocab; ++i) {
        tokens.push_back("[PAD" + std::to_string(i) + "]");
        types.push_back(type_unused);
    }

    gguf::metadata kv;
    kv.set_string(gguf::keys::tokenizer_model, "gpt2");
    kv.set_string(gguf::keys::tokenizer_pre, "gpt-2");
    kv.set_array(gguf::keys::tokenizer_tokens, std::move(tokens));
    kv.set_array(gguf::keys::tokenizer_token_type, std::move(types));
    kv.set_array(gguf::keys::tokenizer_merges, std::move(merged.merges));
    kv.set_u32(gguf::keys::tokenizer_bos_id, eot);
    kv.set_u32(gguf::keys::tokenizer_eos_id, eot);
    kv.set_u32("tokenizer.ggml.padding_token_id", eot);
    kv.set_bool("tokenizer.ggml.add_bos_token", false);
    kv.set_string(gguf::keys::chat_template, std::string(chatml_template));
    return kv;
}

result<gguf::metadata> tokenizer_from_gguf(const std::filesystem::path& path) {
    auto model = gguf::model_files::open(path);
    if (!model) {
        return model.error();
    }
    gguf::metadata kv;
    for (const auto& e : model->kv().entries()) {
        if (e.key.starts_with("tokenizer.")) {
            kv.set(e.key, e.value);
        }
    }
    if (!kv.contains(gguf::keys::tokenizer_tokens)) {
        return make_error(std::errc::invalid_argument, path.string() + ": no tokenizer.ggml.tokens key");
    }
    return kv;
}

result<gguf::metadata> tokenizer_from_hf(const std::filesystem::path& dir, std::uint32_t n_vocab) {
    gguf::metadata kv;
    if (auto r = convert::write_hf_tokenizer(dir, n_vocab, kv); !r) {
        return r.error().with_context(dir.string());
    }
    return kv;
}

result<gguf::metadata> tokenizer_from(const std::filesystem::path& path, std::uint32_t n_vocab) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        if (!std::filesystem::is_regular_file(path / "tokenizer.json", ec)) {
            return make_error(std::errc::no_such_file_or_directory, path.string() + ": folder has no tokenizer.json");
        }
        return tokenizer_from_hf(path, n_vocab);
    }
    return tokenizer_from_gguf(path);
}

result<std::uint32_t> token_count(const gguf::metadata& kv) {
    auto tokens = kv.get_array_of_strings(gguf::keys::tokenizer_tokens);
    if (!tokens) {
        return tokens.error();
    }
    return static_cast<std::uint32_t>(tokens->size());
}

result<void> check_tokenizer(const gguf::metadata& kv) {
    auto v = tokenizer::vocab_from_gguf(kv);
    if (!v) {
        return v.error().with_context("tokenizer");
    }
    auto t = tokenizer::tokenizer::create(std::move(*v));
    if (!t) {
        return t.error().with_context("tokenizer");
    }
    return {};
}

} // namespace sluice::mkmodel
