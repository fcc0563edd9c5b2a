// config.json to model_hparams, following llama.cpp's convert_hf_to_gguf.py for each supported class.
#include "runtime/convert/hf_config.hpp"

#include "runtime/convert/hf_config_hybrid.hpp"
#include "runtime/convert/hf_config_moe_family.hpp"
#include "runtime/convert/hf_fields.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <limits>

namespace sluice::convert {

namespace json = boost::json;

namespace {

using detail::field_error;
using detail::fields;
using detail::unsupported;

struct class_entry {
    std::string_view hf_class;
    hf_family family;
    std::string_view arch;
};

constexpr class_entry classes[] = {
    {"LlamaForCausalLM", hf_family::llama, "llama"},
    {"MistralForCausalLM", hf_family::llama, "llama"},
    {"MixtralForCausalLM", hf_family::mixtral, "llama"},
    {"Qwen2ForCausalLM", hf_family::qwen2, "qwen2"},
    {"Qwen3ForCausalLM", hf_family::qwen3, "qwen3"},
    {"Qwen2MoeForCausalLM", hf_family::qwen2moe, "qwen2moe"},
    {"Qwen3MoeForCausalLM", hf_family::qwen3moe, "qwen3moe"},
    {"OlmoeForCausalLM", hf_family::olmoe, "olmoe"},
    {"DeepseekV2ForCausalLM", hf_family::deepseek2, "deepseek2"},
    {"DeepseekV3ForCausalLM", hf_family::deepseek2, "deepseek2"},
    {"KimiK25ForConditionalGeneration", hf_family::deepseek2, "deepseek2"},
    {"Glm4MoeForCausalLM", hf_family::glm4moe, "glm4moe"},
    {"GptOssForCausalLM", hf_family::gpt_oss, "gpt-oss"},
    {"Qwen3_5MoeForCausalLM", hf_family::qwen35moe, "qwen35moe"},
    {"Qwen3_5MoeForConditionalGeneration", hf_family::qwen35moe, "qwen35moe"},
    {"Qwen3_5ForCausalLM", hf_family::qwen35, "qwen35"},
    {"Qwen3_5ForConditionalGeneration", hf_family::qwen35, "qwen35"},
    {"Qwen3NextForCausalLM", hf_family::qwen3next, "qwen3next"},
};

/// Kimi-K2.5 nests the language model's config in text_config and its tensors under language_model.
constexpr std::string_view nested_text_class = "KimiK25ForConditionalGeneration";

/// A number of `o` (an object at `field`) that must be positive when present; `fallback` when absent or null.
result<double> positive_or(const json::object& o, std::string_view field, std::string_view key, double fallback) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) {
        return fallback;
    }
    if (!v->is_number() || !(v->to_number<double>() > 0.0)) {
        return field_error(std::string(field) + "." + std::string(key), "expected a positive number");
    }
    return v->to_number<double>();
}

/// YaRN (transformers' _compute_yarn_parameters): factor, original_max_position_embeddings (in the object or at the
/// top level), beta_fast/beta_slow, truncate, and the attention factor (given, from mscale/mscale_all_dim, or
/// 0.1 ln(factor) + 1).
result<void> read_yarn(const fields& f, const json::object& o, std::string_view field, models::model_hparams& hp) {
    double factor = 0, orig = 0, beta_fast = 0, beta_slow = 0, mscale = 0, mscale_all = 0;
    SLUICE_CONFIG_TRY(factor, positive_or(o, field, "factor", 0.0));
    if (factor == 0.0) {
        return field_error(std::string(field) + ".factor", "expected a positive number");
    }
    SLUICE_CONFIG_TRY(orig, positive_or(o, field, "original_max_position_embeddings", 0.0));
    if (orig == 0.0) {
        std::uint32_t top = 0;
        SLUICE_CONFIG_TRY(top, f.u32_or("original_max_position_embeddings", 0));
        if (top == 0) {
            return field_error(std::string(field) + ".original_max_position_embeddings", "missing");
        }
        orig = top;
    }
    SLUICE_CONFIG_TRY(beta_fast, positive_or(o, field, "beta_fast", 32.0));
    SLUICE_CONFIG_TRY(beta_slow, positive_or(o, field, "beta_slow", 1.0));
    SLUICE_CONFIG_TRY(mscale, positive_or(o, field, "mscale", 0.0));
    SLUICE_CONFIG_TRY(mscale_all, positive_or(o, field, "mscale_all_dim", 0.0));
    const auto get_mscale = [factor](double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
    double attention = mscale > 0.0 && mscale_all > 0.0 ? get_mscale(mscale) / get_mscale(mscale_all) : get_mscale(1.0);
    SLUICE_CONFIG_TRY(attention, positive_or(o, field, "attention_factor", attention));
    if (const auto* t = o.if_contains("truncate"); t != nullptr && !t->is_null()) {
        if (!t->is_bool()) {
            return field_error(std::string(field) + ".truncate", "expected true or false");
        }
        hp.rope.yarn_truncate = t->get_bool();
    }
    if (orig > std::numeric_limits<std::uint32_t>::max()) {
        return field_error(std::string(field) + ".original_max_position_embeddings", "too large");
    }
    hp.rope.freq_scale = static_cast<float>(1.0 / factor);
    hp.rope.ext_factor = 1.0f;
    hp.rope.n_ctx_orig = static_cast<std::uint32_t>(orig);
    hp.rope.beta_fast = static_cast<float>(beta_fast);
    hp.rope.beta_slow = static_cast<float>(beta_slow);
    hp.rope.attn_factor = static_cast<float>(attention);
    return {};
}

/// rope_scaling (transformers 4) or rope_parameters (transformers 5): absent, {"type"|"rope_type": "default"},
/// linear with a factor, or yarn. rope_parameters may also carry rope_theta.
result<void> read_rope_scaling(const fields& f, models::model_hparams& hp) {
    std::string_view field = "rope_scaling";
    const auto* v = f.find(field);
    if (v == nullptr) {
        field = "rope_parameters";
        v = f.find(field);
    }
    if (v == nullptr) {
        return {};
    }
    if (!v->is_object()) {
        return field_error(field, "expected an object");
    }
    if (const auto* theta = v->get_object().if_contains("rope_theta"); theta && f.find("rope_theta") == nullptr) {
        if (!theta->is_number() || !(theta->to_number<double>() > 0.0)) {
            return field_error("rope_parameters.rope_theta", "expected a positive number");
        }
        hp.rope.freq_base = static_cast<float>(theta->to_number<double>());
    }
    const auto& o = v->get_object();
    const auto* type = o.if_contains("rope_type");
    if (type == nullptr) {
        type = o.if_contains("type");
    }
    const std::string_view name = type && type->is_string() ? std::string_view(type->get_string()) : "";
    if (type == nullptr || name == "default") {
        return {};
    }
    if (name == "yarn") {
        return read_yarn(f, o, field, hp);
    }
    if (name != "linear") {
        std::string why = "'";
        why += name;
        why += "' is not supported (linear and yarn are)";
        return unsupported(std::string(field) + ".type", why);
    }
    const auto* factor = o.if_contains("factor");
    if (factor == nullptr || !factor->is_number() || !(factor->to_number<double>() > 0.0)) {
        return field_error(std::string(field) + ".factor", "expected a positive number");
    }
    hp.rope.freq_scale = static_cast<float>(1.0 / factor->to_number<double>());
    return {};
}

/// Features some configs carry that the GGUF architectures cannot express.
result<void> reject_unsupported(const fields& f, hf_family family) {
    const bool biased_family = family == hf_family::qwen2 || family == hf_family::qwen2moe ||
                               family == hf_family::glm4moe || family == hf_family::gpt_oss;
    if (auto b = f.boolean("attention_bias"); !b) {
        return b.error();
    } else if (!biased_family && b->value_or(false)) {
        return unsupported("attention_bias", "true is not supported for this architecture");
    }
    if (auto b = f.boolean("mlp_bias"); !b) {
        return b.error();
    } else if (b->value_or(false)) {
        return unsupported("mlp_bias", "true is not supported");
    }
    if (auto b = f.boolean("use_sliding_window"); !b) {
        return b.error();
    } else if (b->value_or(false) && family != hf_family::gpt_oss) { // gpt-oss's windows: read_gpt_oss
        return unsupported("use_sliding_window", "sliding-window attention is not supported");
    }
    if (f.find("clip_qkv") != nullptr) {
        return unsupported("clip_qkv", "qkv clipping is not supported");
    }
    if (auto p = f.number_or("partial_rotary_factor", 1.0); !p) {
        return p.error();
    } else if (*p != 1.0 && family != hf_family::glm4moe && !is_hybrid_family(family)) {
        return unsupported("partial_rotary_factor", "partial rotary embeddings are not supported");
    }
    if (const auto* act = f.find("hidden_act"); act && (!act->is_string() || act->get_string() != "silu")) {
        return unsupported("hidden_act", json::serialize(*act) + " is not supported (only silu is)");
    }
    if (family == hf_family::qwen2moe || family == hf_family::qwen3moe || family == hf_family::qwen3next) {
        if (const auto* only = f.find("mlp_only_layers"); only && (!only->is_array() || !only->get_array().empty())) {
            return unsupported("mlp_only_layers", "dense layers inside the MoE stack are not supported");
        }
        if (auto step = f.u32_or("decoder_sparse_step", 1); !step) {
            return step.error();
        } else if (*step != 1) {
            return unsupported("decoder_sparse_step", "only 1 (every layer MoE) is supported");
        }
    }
    return {};
}

/// Expert counts and sizes per family.
result<void> read_experts(const fields& f, hf_family family, models::model_hparams& hp) {
    switch (family) {
    case hf_family::llama:
    case hf_family::qwen2:
    case hf_family::qwen3:
    case hf_family::qwen35:
        return {};
    case hf_family::mixtral:
        SLUICE_CONFIG_TRY(hp.n_expert, f.u32("num_local_experts"));
        hp.n_ff_exp = hp.n_ff;
        break;
    case hf_family::qwen2moe:
    case hf_family::qwen35moe:
    case hf_family::qwen3next:
        SLUICE_CONFIG_TRY(hp.n_expert, f.u32(f.either("num_experts", "num_local_experts")));
        SLUICE_CONFIG_TRY(hp.n_ff_exp, f.u32("moe_intermediate_size"));
        SLUICE_CONFIG_TRY(hp.n_ff_shexp, f.u32("shared_expert_intermediate_size"));
        break;
    case hf_family::qwen3moe:
        SLUICE_CONFIG_TRY(hp.n_expert, f.u32(f.either("num_experts", "num_local_experts")));
        SLUICE_CONFIG_TRY(hp.n_ff_exp, f.u32("moe_intermediate_size"));
        break;
    case hf_family::olmoe:
        SLUICE_CONFIG_TRY(hp.n_expert, f.u32(f.either("num_experts", "num_local_experts")));
        hp.n_ff_exp = hp.n_ff;
        break;
    case hf_family::deepseek2:
    case hf_family::glm4moe:
        return {}; // read_moe_family
    case hf_family::gpt_oss:
        SLUICE_CONFIG_TRY(hp.n_expert, f.u32("num_local_experts"));
        hp.n_ff_exp = hp.n_ff;
        if (f.find("num_experts_per_tok") == nullptr) {
            SLUICE_CONFIG_TRY(hp.n_expert_used, f.u32("experts_per_token"));
        }
        break;
    }
    if (family != hf_family::gpt_oss || f.find("num_experts_per_tok") != nullptr) {
        SLUICE_CONFIG_TRY(hp.n_expert_used, f.u32("num_experts_per_tok"));
    }
    if (hp.n_expert == 0 || hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert) {
        return field_error("num_experts_per_tok", "must be between 1 and the number of experts");
    }
    return {};
}

/// gpt-oss: sliding windows on alternating layers (sliding first), YaRN without rounding, the clamped SwiGLU at
/// its published limit, experts in MXFP4 or dense.
result<void> read_gpt_oss(const fields& f, models::model_hparams& hp) {
    SLUICE_CONFIG_TRY(hp.gpt_oss.sliding_window, f.u32("sliding_window"));
    if (hp.gpt_oss.sliding_window == 0) {
        return field_error("sliding_window", "must be positive");
    }
    if (const auto* types = f.find("layer_types")) {
        const bool is_list = types->is_array() && types->get_array().size() == hp.n_layer;
        for (std::size_t i = 0; is_list && i < hp.n_layer; ++i) {
            const auto& t = types->get_array()[i];
            if (!t.is_string() || t.get_string() != (i % 2 == 0 ? "sliding_attention" : "full_attention")) {
                return unsupported("layer_types", "only alternating sliding_attention/full_attention layers, "
                                                  "sliding first, are supported (as gpt-oss ships)");
            }
        }
        if (!is_list) {
            return field_error("layer_types", "expected a list of num_hidden_layers layer types");
        }
    }
    // The architecture runs YaRN unrounded, as gpt-oss is published (truncate false); a config asking for rounding
    // describes another model.
    const auto* rope = f.find("rope_scaling") != nullptr ? f.find("rope_scaling") : f.find("rope_parameters");
    if (const auto* t = rope && rope->is_object() ? rope->get_object().if_contains("truncate") : nullptr;
        t != nullptr && t->is_bool() && t->get_bool()) {
        return unsupported("rope_scaling.truncate", "gpt-oss runs YaRN with truncate false, as it is published");
    }
    if (auto limit = f.number_or("swiglu_limit", 7.0); !limit) {
        return limit.error();
    } else if (*limit != 7.0) {
        return unsupported("swiglu_limit", "only 7.0 (the published limit, which transformers applies) is supported");
    }
    if (const auto* q = f.find("quantization_config")) {
        const auto* method = q->is_object() ? q->get_object().if_contains("quant_method") : nullptr;
        if (method == nullptr || !method->is_string() || method->get_string() != "mxfp4") {
            return unsupported("quantization_config.quant_method", "only mxfp4 is supported");
        }
    }
    return {};
}

/// Dimensions, rope base and norm epsilon.
result<void> read_sizes(const fields& f, bool dense_ff_required, models::model_hparams& hp) {
    SLUICE_CONFIG_TRY(hp.n_vocab, f.u32("vocab_size"));
    SLUICE_CONFIG_TRY(hp.n_embd, f.u32("hidden_size"));
    SLUICE_CONFIG_TRY(hp.n_layer, f.u32("num_hidden_layers"));
    SLUICE_CONFIG_TRY(hp.n_head, f.u32("num_attention_heads"));
    SLUICE_CONFIG_TRY(hp.n_head_kv, f.u32_or("num_key_value_heads", hp.n_head));
    SLUICE_CONFIG_TRY(hp.n_ctx_train, f.u32_or("max_position_embeddings", 4096));
    SLUICE_CONFIG_TRY(hp.n_ff, dense_ff_required ? f.u32("intermediate_size") : f.u32_or("intermediate_size", 0));
    if (hp.n_head == 0 || hp.n_embd % hp.n_head != 0) {
        if (f.find("head_dim") == nullptr) {
            return field_error("num_attention_heads", "must divide hidden_size when head_dim is not given");
        }
    }
    SLUICE_CONFIG_TRY(hp.head_dim, f.u32_or("head_dim", hp.n_head ? hp.n_embd / hp.n_head : 0));
    hp.head_dim_v = hp.head_dim;
    hp.rope.n_rot = hp.head_dim;
    double rope_theta = 10000.0;
    double eps = 1e-6;
    SLUICE_CONFIG_TRY(rope_theta, f.number_or("rope_theta", 10000.0));
    SLUICE_CONFIG_TRY(eps, f.number_or("rms_norm_eps", 1e-6));
    hp.rope.freq_base = static_cast<float>(rope_theta);
    hp.rms_eps = static_cast<float>(eps);
    return {};
}

/// Everything below the class: sizes, rope, experts, flags and quantization, from the language model's fields
/// `f` (the root, or text_config: Kimi-K2.5, Qwen3.5's ...ForConditionalGeneration) whose object is `text`, and,
/// for quantization_config and tie_word_embeddings, the root `root`.
result<hf_model_config> parse_language_model(const fields& f, const json::object& text, const fields& root,
                                             hf_model_config cfg) {
    auto& hp = cfg.hp;
    if (auto r = reject_unsupported(f, cfg.family); !r) {
        return r.error();
    }
    if (auto r = read_sizes(f, cfg.family != hf_family::qwen35moe, hp); !r) {
        return r.error();
    }
    const bool moe_family = cfg.family == hf_family::deepseek2 || cfg.family == hf_family::glm4moe;
    if (auto r = moe_family ? detail::read_moe_family(f, cfg) : read_rope_scaling(f, hp); !r) {
        return r.error();
    }
    if (auto r = read_experts(f, cfg.family, hp); !r) {
        return r.error();
    }
    if (is_hybrid_family(cfg.family)) {
        if (auto r = read_hybrid_config(text, cfg.family, cfg); !r) {
            return r.error();
        }
    }
    if (cfg.family == hf_family::gpt_oss) { // MXFP4 only, checked by read_gpt_oss
        if (auto r = read_gpt_oss(f, hp); !r) {
            return r.error();
        }
    } else if (auto r = detail::read_quantization(f.find("quantization_config") ? f : root, cfg); !r) {
        return r.error();
    }
    // Flags.
    if (auto tied = (f.find("tie_word_embeddings") ? f : root).boolean("tie_word_embeddings"); !tied) {
        return tied.error();
    } else {
        cfg.tied_embeddings = tied->value_or(false);
    }
    if (auto norm = f.boolean("norm_topk_prob"); !norm) {
        return norm.error();
    } else {
        cfg.norm_topk_prob = *norm;
    }
    return cfg;
}

} // namespace

result<hf_model_config> parse_hf_config(std::string_view config_json) {
    boost::system::error_code ec;
    const json::value root = json::parse(config_json, ec);
    if (ec || !root.is_object()) {
        return make_error(std::errc::bad_message,
                          "config.json: not a JSON object" + (ec ? " (" + ec.message() + ")" : std::string()));
    }
    const fields f(root.get_object());
    const auto* archs = f.find("architectures");
    if (archs == nullptr || !archs->is_array() || archs->get_array().empty() || !archs->get_array()[0].is_string()) {
        return field_error("architectures", "expected a list naming the model class");
    }
    hf_model_config cfg;
    cfg.hf_class = std::string(archs->get_array()[0].get_string());
    const class_entry* entry = nullptr;
    std::string known;
    for (const auto& c : classes) {
        entry = c.hf_class == cfg.hf_class ? &c : entry;
        known += (known.empty() ? "" : ", ") + std::string(c.hf_class);
    }
    if (entry == nullptr) {
        return unsupported("architectures",
                           "model class " + cfg.hf_class + " is not supported (supported: " + known + ")");
    }
    cfg.family = entry->family;
    auto& hp = cfg.hp;
    hp.arch = std::string(entry->arch);
    // Qwen3.5's ...ForConditionalGeneration classes keep the language model's fields in text_config too, but their
    // tensor names are mapped by tensor_map.
    const bool nested = cfg.hf_class == nested_text_class || (is_hybrid_family(cfg.family) && f.find("text_config"));
    const json::value* text = nested ? f.find("text_config") : &root;
    if (text == nullptr || !text->is_object()) {
        return field_error("text_config", "expected the language model's config object");
    }
    if (cfg.hf_class == nested_text_class) {
        cfg.tensor_prefix = "language_model.";
    }
    return parse_language_model(fields(text->get_object(), text != &root ? "text_config." : ""), text->get_object(), f,
                                std::move(cfg));
}

} // namespace sluice::convert
