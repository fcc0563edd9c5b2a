// Reading and writing the GGUF keys of model_hparams, with defaults and consistency checks.
#include "runtime/models/hparams.hpp"

#include "runtime/models/hybrid_hparams.hpp"
#include "runtime/models/moe_family_hparams.hpp"

#include <cmath>
#include <string>

namespace sluice::models {

namespace {

std::string key(std::string_view arch, std::string_view suffix) {
    std::string k(arch);
    k += '.';
    k += suffix;
    return k;
}

// Reads an optional u32 key into `out`, leaving `out` alone when the key is absent.
result<void> optional_u32(const gguf::metadata& kv, const std::string& k, std::uint32_t& out) {
    auto v = kv.find_u32(k);
    if (!v) {
        return v.error();
    }
    if (*v) {
        out = **v;
    }
    return {};
}

result<void> optional_f32(const gguf::metadata& kv, const std::string& k, float& out) {
    if (!kv.contains(k)) {
        return {};
    }
    auto v = kv.get_f32(k);
    if (!v) {
        return v.error();
    }
    out = *v;
    return {};
}

result<void> required_u32(const gguf::metadata& kv, const std::string& k, std::uint32_t& out) {
    auto v = kv.get_u32(k);
    if (!v) {
        return v.error();
    }
    out = *v;
    return {};
}

/// YaRN's magnitude correction transformers applies by default: 0.1 ln(factor) + 1.
float yarn_mscale(float factor) noexcept {
    return factor <= 1.0f ? 1.0f : static_cast<float>(0.1 * std::log(static_cast<double>(factor)) + 1.0);
}

/// rope.scaling.type yarn: the factor, rope.scaling.original_context_length (default context_length), the
/// yarn_beta_fast/slow and yarn_ext_factor keys, and the attention factor: rope.scaling.yarn_attn_factor when
/// given (transformers' attention_factor), else yarn_mscale(factor). The correction range is rounded unless the
/// architecture says otherwise (gpt-oss).
result<void> read_yarn(const gguf::metadata& kv, std::string_view arch, float factor, model_hparams& hp) {
    if (!(factor > 0.0f)) {
        return make_error(std::errc::invalid_argument,
                          "metadata key " + key(arch, "rope.scaling.factor") + ": yarn needs a positive factor");
    }
    hp.rope.freq_scale = 1.0f / factor;
    hp.rope.ext_factor = 1.0f;
    hp.rope.attn_factor = yarn_mscale(factor);
    hp.rope.n_ctx_orig = hp.n_ctx_train;
    if (auto r = optional_u32(kv, key(arch, "rope.scaling.original_context_length"), hp.rope.n_ctx_orig); !r) {
        return r;
    }
    for (auto [suffix, field] : {std::pair<const char*, float*>{"rope.scaling.yarn_beta_fast", &hp.rope.beta_fast},
                                 {"rope.scaling.yarn_beta_slow", &hp.rope.beta_slow},
                                 {"rope.scaling.yarn_ext_factor", &hp.rope.ext_factor},
                                 {"rope.scaling.yarn_attn_factor", &hp.rope.attn_factor}}) {
        if (auto r = optional_f32(kv, key(arch, suffix), *field); !r) {
            return r;
        }
    }
    if (hp.rope.n_ctx_orig == 0 || !(hp.rope.beta_fast > 0.0f) || !(hp.rope.beta_slow > 0.0f)) {
        return make_error(std::errc::invalid_argument, "metadata key " +
                                                           key(arch, "rope.scaling.original_context_length") +
                                                           ": yarn needs a positive original context and betas");
    }
    return {};
}

result<void> read_rope(const gguf::metadata& kv, std::string_view arch, model_hparams& hp) {
    hp.rope.n_rot = hp.head_dim;
    std::uint32_t n_rot = hp.head_dim;
    if (auto r = optional_u32(kv, key(arch, "rope.dimension_count"), n_rot); !r) {
        return r;
    }
    hp.rope.n_rot = n_rot;
    if (auto r = optional_f32(kv, key(arch, "rope.freq_base"), hp.rope.freq_base); !r) {
        return r;
    }
    float factor = 1.0f;
    if (auto r = optional_f32(kv, key(arch, "rope.scaling.factor"), factor); !r) {
        return r;
    }
    auto type = kv.find_string(key(arch, "rope.scaling.type"));
    if (!type) {
        return type.error();
    }
    const std::string_view scaling = type->value_or("none");
    if (scaling == "yarn") {
        return read_yarn(kv, arch, factor, hp);
    }
    if (scaling == "linear" && factor > 0.0f) {
        hp.rope.freq_scale = 1.0f / factor;
    } else if (scaling != "none" && scaling != "linear") {
        return make_error(std::errc::not_supported, "metadata key " + key(arch, "rope.scaling.type") +
                                                        ": rope scaling '" + std::string(scaling) +
                                                        "' is not supported (none, linear and yarn are)");
    }
    return {};
}

} // namespace

result<model_hparams> read_hparams(const gguf::metadata& kv, std::string_view arch) {
    model_hparams hp;
    hp.arch = std::string(arch);
    for (auto [suffix, field] : {std::pair<const char*, std::uint32_t*>{"embedding_length", &hp.n_embd},
                                 {"block_count", &hp.n_layer},
                                 {"attention.head_count", &hp.n_head}}) {
        if (auto r = required_u32(kv, key(arch, suffix), *field); !r) {
            return r.error();
        }
    }
    hp.n_ctx_train = 4096;
    for (auto [suffix, field] : {std::pair<const char*, std::uint32_t*>{"context_length", &hp.n_ctx_train},
                                 {"feed_forward_length", &hp.n_ff},
                                 {"vocab_size", &hp.n_vocab},
                                 {"expert_count", &hp.n_expert},
                                 {"expert_used_count", &hp.n_expert_used},
                                 {"expert_feed_forward_length", &hp.n_ff_exp},
                                 {"expert_shared_feed_forward_length", &hp.n_ff_shexp}}) {
        if (auto r = optional_u32(kv, key(arch, suffix), *field); !r) {
            return r.error();
        }
    }
    hp.n_head_kv = hp.n_head;
    hp.head_dim = hp.n_head ? hp.n_embd / hp.n_head : 0;
    if (auto r = optional_u32(kv, key(arch, "attention.head_count_kv"), hp.n_head_kv); !r) {
        return r.error();
    }
    if (auto r = optional_u32(kv, key(arch, "attention.key_length"), hp.head_dim); !r) {
        return r.error();
    }
    hp.head_dim_v = hp.head_dim;
    if (auto r = optional_u32(kv, key(arch, "attention.value_length"), hp.head_dim_v); !r) {
        return r.error();
    }
    if (auto r = optional_f32(kv, key(arch, "attention.layer_norm_rms_epsilon"), hp.rms_eps); !r) {
        return r.error();
    }
    if (hp.n_ff_exp == 0) {
        hp.n_ff_exp = hp.n_ff;
    }
    if (const auto k = key(arch, "expert_weights_norm"); kv.contains(k)) {
        auto v = kv.get_bool(k);
        if (!v) {
            return v.error();
        }
        hp.expert_weights_norm = *v;
    }
    if (hp.n_vocab == 0) {
        if (auto tokens = kv.get_array_of_strings(gguf::keys::tokenizer_tokens)) {
            hp.n_vocab = static_cast<std::uint32_t>(tokens->size());
        }
    }
    if (auto r = read_rope(kv, arch, hp); !r) {
        return r.error();
    }
    return hp;
}

void write_hparams(const model_hparams& hp, gguf::metadata& kv) {
    const std::string_view a = hp.arch;
    kv.set_string(gguf::keys::architecture, hp.arch);
    kv.set_u32(key(a, "vocab_size"), hp.n_vocab);
    kv.set_u32(key(a, "context_length"), hp.n_ctx_train);
    kv.set_u32(key(a, "embedding_length"), hp.n_embd);
    kv.set_u32(key(a, "block_count"), hp.n_layer + hp.hybrid.nextn_layers); // MTP blocks count in llama.cpp's files
    if (hp.n_ff) {
        kv.set_u32(key(a, "feed_forward_length"), hp.n_ff);
    }
    kv.set_u32(key(a, "attention.head_count"), hp.n_head);
    kv.set_u32(key(a, "attention.head_count_kv"), hp.n_head_kv);
    kv.set_u32(key(a, "attention.key_length"), hp.head_dim);
    kv.set_u32(key(a, "attention.value_length"), hp.head_dim_v);
    kv.set_f32(key(a, "attention.layer_norm_rms_epsilon"), hp.rms_eps);
    kv.set_u32(key(a, "rope.dimension_count"), static_cast<std::uint32_t>(hp.rope.n_rot));
    kv.set_f32(key(a, "rope.freq_base"), hp.rope.freq_base);
    if (hp.rope.ext_factor != 0.0f) {
        const float factor = 1.0f / hp.rope.freq_scale;
        kv.set_string(key(a, "rope.scaling.type"), "yarn");
        kv.set_f32(key(a, "rope.scaling.factor"), factor);
        kv.set_u32(key(a, "rope.scaling.original_context_length"), hp.rope.n_ctx_orig);
        kv.set_f32(key(a, "rope.scaling.yarn_beta_fast"), hp.rope.beta_fast);
        kv.set_f32(key(a, "rope.scaling.yarn_beta_slow"), hp.rope.beta_slow);
        if (hp.rope.ext_factor != 1.0f) {
            kv.set_f32(key(a, "rope.scaling.yarn_ext_factor"), hp.rope.ext_factor);
        }
        if (hp.rope.attn_factor != yarn_mscale(factor)) {
            kv.set_f32(key(a, "rope.scaling.yarn_attn_factor"), hp.rope.attn_factor);
        }
    } else if (hp.rope.freq_scale != 1.0f) {
        kv.set_string(key(a, "rope.scaling.type"), "linear");
        kv.set_f32(key(a, "rope.scaling.factor"), 1.0f / hp.rope.freq_scale);
    }
    if (hp.n_expert) {
        kv.set_u32(key(a, "expert_count"), hp.n_expert);
        kv.set_u32(key(a, "expert_used_count"), hp.n_expert_used);
        kv.set_u32(key(a, "expert_feed_forward_length"), hp.n_ff_exp);
    }
    if (hp.n_ff_shexp && hp.routing.shared_count == 0) { // deepseek2 and glm4moe count shared experts instead
        kv.set_u32(key(a, "expert_shared_feed_forward_length"), hp.n_ff_shexp);
    }
    if (hp.gpt_oss.sliding_window) {
        kv.set_u32(key(a, "attention.sliding_window"), hp.gpt_oss.sliding_window);
    }
    if (hp.hybrid.enabled()) {
        write_hybrid_hparams(hp, kv);
    }
    if (hp.arch == "deepseek2" || hp.arch == "glm4moe") {
        write_moe_family_hparams(hp, kv);
    }
}

result<void> check_hparams(const model_hparams& hp) {
    auto bad = [&](std::string_view suffix, const std::string& why) -> result<void> {
        return make_error(std::errc::invalid_argument, "metadata key " + key(hp.arch, suffix) + ": " + why);
    };
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0) {
        return bad(hp.n_embd == 0    ? "embedding_length"
                   : hp.n_layer == 0 ? "block_count"
                                     : "attention.head_count",
                   "must be positive");
    }
    if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0) {
        return bad("attention.head_count_kv", "must divide attention.head_count (" + std::to_string(hp.n_head) + ")");
    }
    if (hp.head_dim == 0 || hp.head_dim % 2 != 0 || hp.head_dim_v == 0) {
        return bad("attention.key_length", "must be a positive even number");
    }
    if (hp.head_dim_v != hp.head_dim && !hp.mla.enabled()) { // MLA's view: a latent key, its first r values
        return bad("attention.value_length", "must equal attention.key_length (" + std::to_string(hp.head_dim) + ")");
    }
    if (hp.rope.n_rot > hp.head_dim || hp.rope.n_rot % 2 != 0) {
        return bad("rope.dimension_count", "must be even and at most the head size " + std::to_string(hp.head_dim));
    }
    if (hp.n_expert > 0 && (hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert)) {
        return bad("expert_used_count", "must be between 1 and expert_count (" + std::to_string(hp.n_expert) + ")");
    }
    if (hp.n_expert > 0 && hp.n_ff_exp == 0) {
        return bad("expert_feed_forward_length", "must be positive for a MoE model");
    }
    if (hp.n_expert == 0 && hp.n_ff == 0) {
        return bad("feed_forward_length", "must be positive for a dense model");
    }
    if (hp.n_ctx_train == 0) {
        return bad("context_length", "must be positive");
    }
    return {};
}

} // namespace sluice::models
