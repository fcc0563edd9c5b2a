// config.json fields of DeepSeek-V3 / Kimi-K2 (GGUF deepseek2) and GLM-4.5 (glm4moe), as llama.cpp's
// convert_hf_to_gguf.py reads them: MLA ranks, grouped sigmoid routing, leading dense layers, NextN layers, YaRN,
// partial rotary; and DeepSeek's FP8 quantization_config.
#include "runtime/convert/hf_config_moe_family.hpp"

#include <cmath>
#include <string>

namespace sluice::convert::detail {

namespace {

/// rope_parameters (transformers 5) or rope_scaling (4): default, or YaRN with its factor and original context.
/// rope_theta inside rope_parameters counts when the top level has none.
result<void> read_rope(const fields& f, models::model_hparams& hp, hf_moe_family& fam) {
    std::string field = "rope_parameters";
    const auto* v = f.find(field);
    if (v == nullptr) {
        field = "rope_scaling";
        v = f.find(field);
    }
    if (v == nullptr) {
        return {};
    }
    if (!v->is_object()) {
        return field_error(f.name(field), "expected an object");
    }
    const fields r(v->get_object(), f.name(field) + ".");
    if (f.find("rope_theta") == nullptr && r.find("rope_theta") != nullptr) {
        double theta = 0;
        SLUICE_CONFIG_TRY(theta, r.number_or("rope_theta", 0));
        if (!(theta > 0)) {
            return field_error(r.name("rope_theta"), "expected a positive number");
        }
        hp.rope.freq_base = static_cast<float>(theta);
    }
    std::string type;
    SLUICE_CONFIG_TRY(type, r.string_or("rope_type", ""));
    if (type.empty()) {
        SLUICE_CONFIG_TRY(type, r.string_or("type", "default"));
    }
    if (type == "default") {
        return {};
    }
    if (type != "yarn") {
        return unsupported(r.name("rope_type"), "'" + type + "' is not supported (default and yarn are)");
    }
    hf_yarn y;
    double factor = 0, beta_fast = 32, beta_slow = 1, mscale = 0, mscale_all = 0;
    SLUICE_CONFIG_TRY(factor, r.number_or("factor", 0));
    SLUICE_CONFIG_TRY(y.original_context, r.u32("original_max_position_embeddings"));
    SLUICE_CONFIG_TRY(beta_fast, r.number_or("beta_fast", 32));
    SLUICE_CONFIG_TRY(beta_slow, r.number_or("beta_slow", 1));
    SLUICE_CONFIG_TRY(mscale, r.number_or("mscale", 0));
    SLUICE_CONFIG_TRY(mscale_all, r.number_or("mscale_all_dim", 0));
    if (!(factor >= 1.0)) {
        return field_error(r.name("factor"), "expected a YaRN factor of at least 1");
    }
    if (y.original_context == 0) {
        return field_error(r.name("original_max_position_embeddings"), "must be positive");
    }
    if (!(beta_fast > 0) || !(beta_slow > 0)) {
        return field_error(r.name(beta_fast > 0 ? "beta_slow" : "beta_fast"), "must be positive");
    }
    if (r.find("attention_factor") != nullptr) {
        double a = 0;
        SLUICE_CONFIG_TRY(a, r.number_or("attention_factor", 0));
        y.attention_factor = static_cast<float>(a);
    }
    std::optional<bool> truncate;
    SLUICE_CONFIG_TRY(truncate, r.boolean("truncate"));
    y.truncate = truncate.value_or(true);
    y.factor = static_cast<float>(factor);
    y.beta_fast = static_cast<float>(beta_fast);
    y.beta_slow = static_cast<float>(beta_slow);
    y.mscale = static_cast<float>(mscale);
    y.mscale_all_dim = static_cast<float>(mscale_all);
    hp.rope.freq_scale = static_cast<float>(1.0 / factor);
    fam.yarn = y;
    return {};
}

/// Routed and shared experts, groups, scale, leading dense layers and NextN layers (both families).
result<void> read_routing(const fields& f, const hf_model_config& cfg, models::model_hparams& hp, hf_moe_family& fam) {
    const bool deepseek = cfg.family == hf_family::deepseek2;
    SLUICE_CONFIG_TRY(hp.n_expert, f.u32("n_routed_experts"));
    SLUICE_CONFIG_TRY(hp.n_expert_used, f.u32("num_experts_per_tok"));
    SLUICE_CONFIG_TRY(hp.n_ff_exp, f.u32("moe_intermediate_size"));
    SLUICE_CONFIG_TRY(fam.n_shared_experts, f.u32_or("n_shared_experts", 0));
    SLUICE_CONFIG_TRY(fam.n_groups, f.u32_or("n_group", 1));
    SLUICE_CONFIG_TRY(fam.groups_used, f.u32_or("topk_group", 1));
    SLUICE_CONFIG_TRY(fam.leading_dense, f.u32_or("first_k_dense_replace", 0));
    SLUICE_CONFIG_TRY(fam.nextn_layers, f.u32_or("num_nextn_predict_layers", 0));
    double scale = 1.0;
    SLUICE_CONFIG_TRY(scale, f.number_or("routed_scaling_factor", 1.0));
    fam.routed_scale = static_cast<float>(scale);
    hp.n_ff_shexp = hp.n_ff_exp * fam.n_shared_experts;
    if (hp.n_expert == 0 || hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert) {
        return field_error(f.name("num_experts_per_tok"),
                           "must be between 1 and n_routed_experts (" + std::to_string(hp.n_expert) + ")");
    }
    if (fam.n_groups == 0 || hp.n_expert % fam.n_groups != 0) {
        return field_error(f.name("n_group"),
                           "must divide n_routed_experts (" + std::to_string(hp.n_expert) + ") into equal groups");
    }
    const std::uint32_t per_group = hp.n_expert / fam.n_groups;
    if (fam.n_groups > 1 && per_group < 2) {
        return field_error(f.name("n_group"), "groups need at least 2 experts (a group scores its top two)");
    }
    if (fam.groups_used == 0 || fam.groups_used > fam.n_groups) {
        return field_error(f.name("topk_group"),
                           "must be between 1 and n_group (" + std::to_string(fam.n_groups) + ")");
    }
    if (hp.n_expert_used > fam.groups_used * per_group) {
        return field_error(f.name("num_experts_per_tok"), "exceeds the experts of the topk_group chosen groups (" +
                                                              std::to_string(fam.groups_used * per_group) + ")");
    }
    if (fam.leading_dense > hp.n_layer) {
        return field_error(f.name("first_k_dense_replace"),
                           "exceeds num_hidden_layers (" + std::to_string(hp.n_layer) + ")");
    }
    if (!(scale > 0) || !std::isfinite(scale)) {
        return field_error(f.name("routed_scaling_factor"), "expected a positive number");
    }
    std::string scoring;
    // DeepSeek-V2's modelling code scores by softmax, V3's and GLM's by sigmoid; the field overrides.
    SLUICE_CONFIG_TRY(scoring,
                      f.string_or("scoring_func", cfg.hf_class == "DeepseekV2ForCausalLM" ? "softmax" : "sigmoid"));
    if (scoring != "sigmoid" && scoring != "softmax") {
        return unsupported(f.name("scoring_func"), "'" + scoring + "' is not supported (sigmoid and softmax are)");
    }
    fam.sigmoid_scores = scoring == "sigmoid";
    if (deepseek) {
        std::string method;
        SLUICE_CONFIG_TRY(method, f.string_or("topk_method", "noaux_tc"));
        // group_limited_greedy (DeepSeek-V2) scores a group by its best expert, not its top two.
        if (method != "noaux_tc" && method != "greedy" && !(method == "group_limited_greedy" && fam.n_groups == 1)) {
            return unsupported(f.name("topk_method"), "'" + method + "' is not supported (noaux_tc and greedy are)");
        }
    }
    return {};
}

/// MLA sizes and the GGUF view llama.cpp writes: one KV head whose key is the latent plus the rotary key.
result<void> read_mla(const fields& f, models::model_hparams& hp, hf_moe_family& fam) {
    SLUICE_CONFIG_TRY(fam.q_lora_rank, f.u32_or("q_lora_rank", 0));
    SLUICE_CONFIG_TRY(fam.kv_lora_rank, f.u32("kv_lora_rank"));
    SLUICE_CONFIG_TRY(fam.qk_nope_head_dim, f.u32("qk_nope_head_dim"));
    SLUICE_CONFIG_TRY(fam.qk_rope_head_dim, f.u32("qk_rope_head_dim"));
    SLUICE_CONFIG_TRY(fam.v_head_dim, f.u32("v_head_dim"));
    for (auto [key, v] : {std::pair<const char*, std::uint32_t>{"kv_lora_rank", fam.kv_lora_rank},
                          {"qk_nope_head_dim", fam.qk_nope_head_dim},
                          {"v_head_dim", fam.v_head_dim}}) {
        if (v == 0) {
            return field_error(f.name(key), "must be positive");
        }
    }
    if (fam.qk_rope_head_dim == 0 || fam.qk_rope_head_dim % 2 != 0) {
        return field_error(f.name("qk_rope_head_dim"), "must be a positive even number");
    }
    std::uint32_t qk_head_dim = 0;
    SLUICE_CONFIG_TRY(qk_head_dim, f.u32_or("qk_head_dim", fam.qk_nope_head_dim + fam.qk_rope_head_dim));
    if (qk_head_dim != fam.qk_nope_head_dim + fam.qk_rope_head_dim) {
        return field_error(f.name("qk_head_dim"), "must equal qk_nope_head_dim + qk_rope_head_dim (" +
                                                      std::to_string(fam.qk_nope_head_dim + fam.qk_rope_head_dim) +
                                                      ")");
    }
    std::optional<bool> bias;
    SLUICE_CONFIG_TRY(bias, f.boolean("attention_bias"));
    if (bias.value_or(false)) {
        return unsupported(f.name("attention_bias"), "true is not supported for DeepSeek");
    }
    hp.n_head_kv = 1;
    hp.head_dim = fam.kv_lora_rank + fam.qk_rope_head_dim;
    hp.head_dim_v = fam.kv_lora_rank;
    hp.rope.n_rot = fam.qk_rope_head_dim;
    return {};
}

/// GLM-4.5 attention: explicit head_dim, partial rotary (default 0.5, as llama.cpp), optional q/k norms.
result<void> read_glm_attention(const fields& f, models::model_hparams& hp, hf_moe_family& fam) {
    double partial = 0.5;
    SLUICE_CONFIG_TRY(partial, f.number_or("partial_rotary_factor", 0.5));
    if (const auto* rp = f.find("rope_parameters"); rp != nullptr && rp->is_object()) {
        const fields r(rp->get_object(), f.name("rope_parameters."));
        SLUICE_CONFIG_TRY(partial, r.number_or("partial_rotary_factor", partial));
    }
    const double n_rot = std::floor(hp.head_dim * partial);
    if (!(partial > 0 && partial <= 1) || static_cast<std::uint32_t>(n_rot) % 2 != 0 || n_rot < 2) {
        return field_error(f.name("partial_rotary_factor"),
                           "must give an even number of rotary dimensions within head_dim (" +
                               std::to_string(hp.head_dim) + ")");
    }
    hp.rope.n_rot = static_cast<std::uint32_t>(n_rot);
    std::optional<bool> qk_norm;
    SLUICE_CONFIG_TRY(qk_norm, f.boolean("use_qk_norm"));
    fam.qk_norm = qk_norm.value_or(false);
    return {};
}

/// compressed-tensors with one config group of symmetric integer weights in groups ("pack-quantized", as
/// Kimi-K2-Thinking and K2.5 ship their experts).
result<void> read_packed_int(const fields& q, hf_model_config& cfg) {
    std::string format;
    SLUICE_CONFIG_TRY(format, q.string_or("format", ""));
    if (format != "pack-quantized") {
        return unsupported(q.name("format"), "'" + format + "' is not supported (pack-quantized is)");
    }
    const auto* groups = q.find("config_groups");
    if (groups == nullptr || !groups->is_object() || groups->get_object().size() != 1 ||
        !groups->get_object().begin()->value().is_object()) {
        return unsupported(q.name("config_groups"), "expected exactly one group");
    }
    const auto& group = groups->get_object().begin()->value().get_object();
    const auto* weights = group.if_contains("weights");
    if (weights == nullptr || !weights->is_object()) {
        return field_error(q.name("config_groups.") + std::string(groups->get_object().begin()->key()) + ".weights",
                           "expected an object");
    }
    const fields w(weights->get_object(),
                   q.name("config_groups.") + std::string(groups->get_object().begin()->key()) + ".weights.");
    std::uint32_t bits = 0, group_size = 0;
    std::string type, strategy;
    std::optional<bool> symmetric;
    SLUICE_CONFIG_TRY(bits, w.u32("num_bits"));
    SLUICE_CONFIG_TRY(group_size, w.u32("group_size"));
    SLUICE_CONFIG_TRY(type, w.string_or("type", "int"));
    SLUICE_CONFIG_TRY(strategy, w.string_or("strategy", "group"));
    SLUICE_CONFIG_TRY(symmetric, w.boolean("symmetric"));
    if (bits != 4 && bits != 8) {
        return unsupported(w.name("num_bits"), std::to_string(bits) + " is not supported (4 and 8 are)");
    }
    if (type != "int" || strategy != "group" || !symmetric.value_or(true) || group_size == 0) {
        return unsupported(w.name(type != "int"         ? "type"
                                  : strategy != "group" ? "strategy"
                                  : group_size == 0     ? "group_size"
                                                        : "symmetric"),
                           "only symmetric integer weights in groups are supported");
    }
    cfg.packed_int = std::array<std::uint32_t, 2>{bits, group_size};
    return {};
}

/// What the family's fields mean in model_hparams (written as GGUF keys by write_hparams): YaRN's range and
/// factors, MLA's ranks, the routing, and GLM's NextN layers (DeepSeek's are dropped, as llama.cpp's converter does).
void apply_family(const hf_moe_family& fam, hf_family family, models::model_hparams& hp) {
    if (fam.yarn) {
        const auto& y = *fam.yarn;
        hp.rope.ext_factor = 1.0f;
        hp.rope.n_ctx_orig = y.original_context;
        hp.rope.beta_fast = y.beta_fast;
        hp.rope.beta_slow = y.beta_slow;
        hp.rope.yarn_truncate = y.truncate;
        // transformers' attention factor: given, or mscale / mscale_all_dim when both are set, else get_mscale(f).
        // deepseek2 files keep the rotation's factor at 1 unless rope.scaling.yarn_attn_factor says otherwise, and
        // write_hparams omits that key at the default get_mscale(f): so a ratio of 1 is written as the default.
        const float fallback = kernels::yarn_mscale(y.factor);
        float factor = y.attention_factor.value_or(fallback);
        if (!y.attention_factor && y.mscale != 0.0f && y.mscale_all_dim != 0.0f) {
            factor = kernels::yarn_mscale(y.factor, y.mscale) / kernels::yarn_mscale(y.factor, y.mscale_all_dim);
        }
        hp.rope.attn_factor = family == hf_family::deepseek2 && factor == 1.0f ? fallback : factor;
        hp.mla.yarn_log_multiplier = 0.1f * y.mscale_all_dim;
    }
    if (family == hf_family::deepseek2) {
        hp.mla.q_lora_rank = fam.q_lora_rank;
        hp.mla.kv_lora_rank = fam.kv_lora_rank;
        hp.mla.nope_dim = fam.qk_nope_head_dim;
        hp.mla.v_dim = fam.v_head_dim;
    } else {
        hp.hybrid.nextn_layers = fam.nextn_layers;
    }
    auto& r = hp.routing;
    r.scoring = fam.sigmoid_scores ? kernels::router_scoring::sigmoid : kernels::router_scoring::softmax;
    r.n_groups = fam.n_groups;
    r.groups_used = fam.groups_used;
    r.weights_scale = fam.routed_scale;
    r.leading_dense = fam.leading_dense;
    r.shared_count = fam.n_shared_experts;
}

} // namespace

result<void> read_moe_family(const fields& f, hf_model_config& cfg) {
    const bool deepseek = cfg.family == hf_family::deepseek2;
    hf_moe_family fam;
    if (auto r = read_rope(f, cfg.hp, fam); !r) {
        return r;
    }
    if (auto r = deepseek ? read_mla(f, cfg.hp, fam) : read_glm_attention(f, cfg.hp, fam); !r) {
        return r;
    }
    if (auto r = read_routing(f, cfg, cfg.hp, fam); !r) {
        return r;
    }
    apply_family(fam, cfg.family, cfg.hp);
    cfg.moe_family = fam;
    return {};
}

result<void> read_quantization(const fields& f, hf_model_config& cfg) {
    const auto* q = f.find("quantization_config");
    if (q == nullptr) {
        return {};
    }
    if (!q->is_object()) {
        return field_error(f.name("quantization_config"), "expected an object");
    }
    const fields qf(q->get_object(), f.name("quantization_config."));
    std::string method;
    SLUICE_CONFIG_TRY(method, qf.string_or("quant_method", ""));
    if (method == "compressed-tensors") {
        return read_packed_int(qf, cfg);
    }
    if (method != "fp8") {
        return unsupported(qf.name("quant_method"),
                           "'" + method + "' is not supported (fp8 with block scales and compressed-tensors are)");
    }
    std::string fmt;
    SLUICE_CONFIG_TRY(fmt, qf.string_or("fmt", "e4m3"));
    if (fmt != "e4m3") {
        return unsupported(qf.name("fmt"), "'" + fmt + "' is not supported (e4m3 is)");
    }
    const auto* block = qf.find("weight_block_size");
    const auto bad_block = [&] {
        return field_error(qf.name("weight_block_size"), "expected [rows, columns] of positive integers");
    };
    if (block == nullptr || !block->is_array() || block->get_array().size() != 2) {
        return bad_block();
    }
    std::array<std::uint32_t, 2> b{};
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& v = block->get_array()[i];
        if (!v.is_int64() || v.get_int64() <= 0 || v.get_int64() > (1 << 20)) {
            return bad_block();
        }
        b[i] = static_cast<std::uint32_t>(v.get_int64());
    }
    cfg.fp8_block = b;
    return {};
}

} // namespace sluice::convert::detail
