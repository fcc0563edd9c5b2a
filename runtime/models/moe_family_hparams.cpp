// Reading, checking and writing the deepseek2 / glm4moe GGUF keys.
#include "runtime/models/moe_family_hparams.hpp"

#include <cmath>
#include <string>

namespace sluice::models {

namespace {

std::string key(const model_hparams& hp, std::string_view suffix) {
    std::string k = hp.arch;
    k += '.';
    k += suffix;
    return k;
}

error bad(const model_hparams& hp, std::string_view suffix, const std::string& why) {
    return make_error(std::errc::invalid_argument, "metadata key " + key(hp, suffix) + ": " + why);
}

result<void> optional_u32(const gguf::metadata& kv, const std::string& k, std::uint32_t& out) {
    auto v = kv.find_u32(k);
    if (!v) {
        return v.error();
    }
    out = v->value_or(out);
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

constexpr std::uint32_t gating_softmax = 1; // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_*
constexpr std::uint32_t gating_sigmoid = 2;

} // namespace

result<void> read_routing_hparams(const gguf::metadata& kv, model_hparams& hp, bool default_sigmoid) {
    auto& r = hp.routing;
    std::uint32_t gating = default_sigmoid ? gating_sigmoid : gating_softmax;
    for (auto [suffix, field] : {std::pair<const char*, std::uint32_t*>{"expert_gating_func", &gating},
                                 {"expert_group_count", &r.n_groups},
                                 {"expert_group_used_count", &r.groups_used},
                                 {"leading_dense_block_count", &r.leading_dense},
                                 {"expert_shared_count", &r.shared_count}}) {
        if (auto res = optional_u32(kv, key(hp, suffix), *field); !res) {
            return res;
        }
    }
    if (auto res = optional_f32(kv, key(hp, "expert_weights_scale"), r.weights_scale); !res) {
        return res;
    }
    if (gating != gating_softmax && gating != gating_sigmoid) {
        return bad(hp, "expert_gating_func", std::to_string(gating) + " is not supported (1 softmax, 2 sigmoid)");
    }
    r.scoring = gating == gating_sigmoid ? kernels::router_scoring::sigmoid : kernels::router_scoring::softmax;
    if (!(r.weights_scale > 0.0f) || !std::isfinite(r.weights_scale)) {
        return bad(hp, "expert_weights_scale", "must be a positive number");
    }
    if (hp.n_expert == 0) {
        return bad(hp, "expert_count", "architecture " + hp.arch + " needs experts");
    }
    if (r.n_groups == 0 || hp.n_expert % r.n_groups != 0) {
        return bad(hp, "expert_group_count",
                   "must divide expert_count (" + std::to_string(hp.n_expert) + ") into equal groups");
    }
    const std::uint32_t per_group = hp.n_expert / r.n_groups;
    if (r.n_groups > 1 && per_group < 2) {
        return bad(hp, "expert_group_count", "groups need at least 2 experts (a group scores its top two)");
    }
    if (r.groups_used == 0 || r.groups_used > r.n_groups) {
        return bad(hp, "expert_group_used_count",
                   "must be between 1 and expert_group_count (" + std::to_string(r.n_groups) + ")");
    }
    if (hp.n_expert_used > r.groups_used * per_group) {
        return bad(hp, "expert_used_count",
                   "exceeds the experts of the chosen groups (" + std::to_string(r.groups_used * per_group) + ")");
    }
    if (r.leading_dense > hp.n_layer) {
        return bad(hp, "leading_dense_block_count", "exceeds block_count (" + std::to_string(hp.n_layer) + ")");
    }
    if (r.leading_dense > 0 && hp.n_ff == 0) {
        return bad(hp, "feed_forward_length", "must be positive: the leading dense layers use it");
    }
    if (r.shared_count > 64) {
        return bad(hp, "expert_shared_count", "more than 64 shared experts is not supported");
    }
    hp.n_ff_shexp = hp.n_ff_exp * r.shared_count;
    hp.shared_expert = r.shared_count > 0;
    return {};
}

result<void> read_mla_hparams(const gguf::metadata& kv, model_hparams& hp) {
    auto& m = hp.mla;
    std::uint32_t k_mla = 0;
    if (auto r = optional_u32(kv, key(hp, "attention.q_lora_rank"), m.q_lora_rank); !r) {
        return r;
    }
    for (auto [suffix, field] : {std::pair<const char*, std::uint32_t*>{"attention.kv_lora_rank", &m.kv_lora_rank},
                                 {"attention.key_length_mla", &k_mla},
                                 {"attention.value_length_mla", &m.v_dim}}) {
        auto v = kv.get_u32(key(hp, suffix));
        if (!v) {
            return make_error(std::errc::invalid_argument,
                              v.error().message + " (MLA files from llama.cpp's converter since 2025 have it)");
        }
        *field = *v;
    }
    const std::uint32_t n_rot = static_cast<std::uint32_t>(hp.rope.n_rot);
    if (m.kv_lora_rank == 0) {
        return bad(hp, "attention.kv_lora_rank", "must be positive");
    }
    if (hp.n_head_kv != 1) {
        return bad(hp, "attention.head_count_kv", "must be 1 (MLA's one latent key per position)");
    }
    if (n_rot == 0 || n_rot % 2 != 0) {
        return bad(hp, "rope.dimension_count", "must be a positive even number (the rotary key)");
    }
    if (hp.head_dim != m.kv_lora_rank + n_rot) {
        return bad(hp, "attention.key_length",
                   "must equal kv_lora_rank + rope.dimension_count (" + std::to_string(m.kv_lora_rank + n_rot) + ")");
    }
    if (hp.head_dim_v != m.kv_lora_rank) {
        return bad(hp, "attention.value_length", "must equal kv_lora_rank (" + std::to_string(m.kv_lora_rank) + ")");
    }
    if (k_mla <= n_rot) {
        return bad(hp, "attention.key_length_mla", "must exceed rope.dimension_count (" + std::to_string(n_rot) + ")");
    }
    if (m.v_dim == 0) {
        return bad(hp, "attention.value_length_mla", "must be positive");
    }
    m.nope_dim = k_mla - n_rot;
    // YaRN's softmax correction: llama.cpp's converter writes 0.1 * mscale_all_dim.
    float log_mul = 0.0f;
    if (auto r = optional_f32(kv, key(hp, "rope.scaling.yarn_log_multiplier"), log_mul); !r) {
        return r;
    }
    const float factor = hp.rope.freq_scale > 0.0f ? 1.0f / hp.rope.freq_scale : 1.0f;
    m.softmax_mscale = (hp.rope.ext_factor != 0.0f && factor > 1.0f) ? 1.0f + log_mul * std::log(factor) : 1.0f;
    m.yarn_log_multiplier = log_mul;
    return {};
}

result<void> read_nextn_layers(const gguf::metadata& kv, model_hparams& hp) {
    std::uint32_t n = 0;
    if (auto r = optional_u32(kv, key(hp, "nextn_predict_layers"), n); !r) {
        return r;
    }
    // configure may run on hparams already reduced to the main stack (the converter's): block_count decides.
    auto blocks = kv.get_u32(key(hp, "block_count"));
    if (!blocks) {
        return blocks.error();
    }
    if (n >= *blocks) {
        return bad(hp, "nextn_predict_layers", "must be less than block_count (" + std::to_string(*blocks) + ")");
    }
    hp.hybrid.nextn_layers = n;
    hp.n_layer = *blocks - n;
    return {};
}

void write_moe_family_hparams(const model_hparams& hp, gguf::metadata& kv) {
    const auto& r = hp.routing;
    kv.set_u32(key(hp, "expert_gating_func"),
               r.scoring == kernels::router_scoring::sigmoid ? gating_sigmoid : gating_softmax);
    kv.set_u32(key(hp, "expert_group_count"), r.n_groups);
    kv.set_u32(key(hp, "expert_group_used_count"), r.groups_used);
    kv.set_f32(key(hp, "expert_weights_scale"), r.weights_scale);
    kv.set_u32(key(hp, "leading_dense_block_count"), r.leading_dense);
    kv.set_u32(key(hp, "expert_shared_count"), r.shared_count);
    if (hp.arch == "glm4moe" || hp.hybrid.nextn_layers) {
        kv.set_u32(key(hp, "nextn_predict_layers"), hp.hybrid.nextn_layers);
    }
    if (!hp.mla.enabled()) {
        return;
    }
    const auto& m = hp.mla;
    if (m.q_lora_rank) {
        kv.set_u32(key(hp, "attention.q_lora_rank"), m.q_lora_rank);
    }
    kv.set_u32(key(hp, "attention.kv_lora_rank"), m.kv_lora_rank);
    kv.set_u32(key(hp, "attention.key_length_mla"), m.nope_dim + static_cast<std::uint32_t>(hp.rope.n_rot));
    kv.set_u32(key(hp, "attention.value_length_mla"), m.v_dim);
    if (m.yarn_log_multiplier != 0.0f) {
        kv.set_f32(key(hp, "rope.scaling.yarn_log_multiplier"), m.yarn_log_multiplier);
    }
}

} // namespace sluice::models
