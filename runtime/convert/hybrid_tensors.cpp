// Hybrid checkpoints' names and layouts, as llama.cpp's convert_hf_to_gguf.py maps Qwen3_5(Moe) and Qwen3Next.
#include "runtime/convert/hybrid_tensors.hpp"

#include <array>

namespace sluice::convert {

using models::tensor_kind;
using models::tensor_suffix;

namespace {

struct entry {
    std::string_view hf;
    hybrid_target target;
};

constexpr std::array<entry, 11> linear_attention_names{{
    {"linear_attn.in_proj_qkv.weight", {tensor_kind::attn_qkv}},
    {"linear_attn.in_proj_z.weight", {tensor_kind::attn_gate}},
    {"linear_attn.in_proj_a.weight", {tensor_kind::ssm_alpha}},
    {"linear_attn.in_proj_b.weight", {tensor_kind::ssm_beta}},
    {"linear_attn.in_proj_ba.weight", {tensor_kind::ssm_ba}},
    {"linear_attn.conv1d.weight", {tensor_kind::ssm_conv1d}},
    {"linear_attn.dt_bias", {tensor_kind::ssm_dt, tensor_suffix::bias}},
    {"linear_attn.A_log", {tensor_kind::ssm_a, tensor_suffix::none}},
    {"linear_attn.norm.weight", {tensor_kind::ssm_norm}},
    {"linear_attn.out_proj.weight", {tensor_kind::ssm_out}},
    {"linear_attn.in_proj_qkvz.weight", {tensor_kind::attn_qkv, tensor_suffix::weight, true}},
}};

/// The MTP block's own tensors (mtp.<name>), by the pseudo layer-relative names hybrid_tensor_name gives them.
constexpr std::array<entry, 4> mtp_names{{
    {"mtp_fc.weight", {tensor_kind::nextn_eh_proj}},
    {"mtp_pre_fc_norm_embedding.weight", {tensor_kind::nextn_enorm}},
    {"mtp_pre_fc_norm_hidden.weight", {tensor_kind::nextn_hnorm}},
    {"mtp_norm.weight", {tensor_kind::nextn_shared_head_norm}},
}};

value_heads heads_of(const hf_hybrid_config& h, std::uint64_t head_size) {
    return {h.group_count, h.time_step_rank / h.group_count, head_size};
}

/// The whole-tensor runs of `src` rebuilt through `spans` (source rows of its one tensor).
void reorder_rows(tensor_source& src, const std::vector<row_span>& spans) {
    const st_tensor* t = src.runs.front().tensor;
    src.runs.clear();
    for (const auto& s : spans) {
        src.runs.push_back({t, s.first, s.n});
    }
}

} // namespace

std::optional<std::string> hybrid_tensor_name(const hf_model_config& cfg, std::string_view name) {
    for (std::string_view prefix : {"model.visual.", "visual.", "model.vision_tower.", "vision_tower."}) {
        if (name.starts_with(prefix)) {
            return std::nullopt;
        }
    }
    std::string out(name);
    if (name.starts_with("model.language_model.")) {
        out = "model." + std::string(name.substr(21));
    } else if (name.starts_with("language_model.model.")) {
        out = "model." + std::string(name.substr(21));
    } else if (name.starts_with("language_model.lm_head.")) {
        out = std::string(name.substr(15));
    }
    std::string_view rest = out;
    if (rest.starts_with("model.mtp.")) {
        rest.remove_prefix(6);
    }
    if (rest.starts_with("mtp.")) {
        rest.remove_prefix(4);
        const std::string layer = "model.layers." + std::to_string(cfg.hp.n_layer) + ".";
        if (rest.starts_with("layers.0.")) {
            return layer + std::string(rest.substr(9));
        }
        return layer + "mtp_" + std::string(rest); // mtp_fc.weight, mtp_norm.weight, ...
    }
    return out;
}

std::optional<hybrid_target> hybrid_layer_entry(std::string_view rest) {
    for (const auto& e : linear_attention_names) {
        if (rest == e.hf) {
            return e.target;
        }
    }
    for (const auto& e : mtp_names) {
        if (rest == e.hf) {
            return e.target;
        }
    }
    if (rest == "post_attention_layernorm.weight") {
        return hybrid_target{tensor_kind::attn_post_norm};
    }
    return std::nullopt;
}

void apply_hybrid_layout(const hf_model_config& cfg, tensor_kind kind, tensor_source& src) {
    switch (kind) {
    case tensor_kind::attn_norm:
    case tensor_kind::attn_post_norm:
    case tensor_kind::output_norm:
    case tensor_kind::attn_q_norm:
    case tensor_kind::attn_k_norm:
    case tensor_kind::nextn_enorm:
    case tensor_kind::nextn_hnorm:
    case tensor_kind::nextn_shared_head_norm:
        src.transform = value_transform::add_one; // checkpoints multiply by 1 + w
        break;
    case tensor_kind::ssm_a:
        src.transform = value_transform::neg_exp;
        break;
    default:
        break;
    }
    const auto& h = *cfg.hybrid;
    const bool tiled = cfg.family != hf_family::qwen3next && h.time_step_rank != h.group_count;
    if (!tiled || src.runs.size() != 1) {
        return;
    }
    const std::uint64_t qk_rows = 2ull * h.group_count * h.state_size;
    switch (kind) {
    case tensor_kind::attn_qkv:
    case tensor_kind::ssm_conv1d:
        reorder_rows(src, tiled_value_rows(heads_of(h, h.state_size), qk_rows));
        break;
    case tensor_kind::attn_gate:
        reorder_rows(src, tiled_value_rows(heads_of(h, h.state_size), 0));
        break;
    case tensor_kind::ssm_alpha:
    case tensor_kind::ssm_beta:
        reorder_rows(src, tiled_value_rows(heads_of(h, 1), 0));
        break;
    case tensor_kind::ssm_out:
        src.column_order = tiled_value_columns(heads_of(h, h.state_size));
        break;
    case tensor_kind::ssm_dt:
    case tensor_kind::ssm_a:
        src.column_order = tiled_value_columns(heads_of(h, 1));
        break;
    default:
        break;
    }
}

std::vector<row_run> qwen3next_split_runs(const hf_model_config& cfg, const st_tensor& t, bool gate) {
    const auto& h = *cfg.hybrid;
    const std::uint64_t per_k = h.time_step_rank / h.group_count;
    const auto spans = gate ? qwen3next_gate_rows(h.group_count, h.state_size, per_k)
                            : qwen3next_qkv_rows(h.group_count, h.state_size, per_k);
    std::vector<row_run> runs;
    for (const auto& s : spans) {
        runs.push_back({&t, s.first, s.n});
    }
    return runs;
}

} // namespace sluice::convert
