// The GGUF base name of every tensor kind, as llama.cpp's converter writes them.
#include "runtime/models/tensor_names.hpp"

#include <array>
#include <charconv>

namespace sluice::models {

namespace {

struct name_row {
    tensor_kind kind;
    std::string_view base;
    bool per_layer;
    bool bare = false; ///< no ".weight"/".bias" suffix
};

constexpr std::array<name_row, static_cast<std::size_t>(tensor_kind::count)> names{{
    {tensor_kind::token_embd, "token_embd", false},
    {tensor_kind::output_norm, "output_norm", false},
    {tensor_kind::output, "output", false},
    {tensor_kind::attn_norm, "attn_norm", true},
    {tensor_kind::attn_q, "attn_q", true},
    {tensor_kind::attn_k, "attn_k", true},
    {tensor_kind::attn_v, "attn_v", true},
    {tensor_kind::attn_output, "attn_output", true},
    {tensor_kind::attn_q_norm, "attn_q_norm", true},
    {tensor_kind::attn_k_norm, "attn_k_norm", true},
    {tensor_kind::ffn_norm, "ffn_norm", true},
    {tensor_kind::ffn_gate, "ffn_gate", true},
    {tensor_kind::ffn_up, "ffn_up", true},
    {tensor_kind::ffn_down, "ffn_down", true},
    {tensor_kind::ffn_gate_inp, "ffn_gate_inp", true},
    {tensor_kind::ffn_gate_exps, "ffn_gate_exps", true},
    {tensor_kind::ffn_up_exps, "ffn_up_exps", true},
    {tensor_kind::ffn_down_exps, "ffn_down_exps", true},
    {tensor_kind::ffn_gate_inp_shexp, "ffn_gate_inp_shexp", true},
    {tensor_kind::ffn_gate_shexp, "ffn_gate_shexp", true},
    {tensor_kind::ffn_up_shexp, "ffn_up_shexp", true},
    {tensor_kind::ffn_down_shexp, "ffn_down_shexp", true},
    {tensor_kind::attn_sinks, "attn_sinks", true},
    {tensor_kind::attn_post_norm, "post_attention_norm", true},
    {tensor_kind::attn_qkv, "attn_qkv", true},
    {tensor_kind::attn_gate, "attn_gate", true},
    {tensor_kind::ssm_conv1d, "ssm_conv1d", true},
    {tensor_kind::ssm_dt, "ssm_dt", true},
    {tensor_kind::ssm_a, "ssm_a", true, true},
    {tensor_kind::ssm_alpha, "ssm_alpha", true},
    {tensor_kind::ssm_beta, "ssm_beta", true},
    {tensor_kind::ssm_ba, "ssm_ba", true},
    {tensor_kind::ssm_norm, "ssm_norm", true},
    {tensor_kind::ssm_out, "ssm_out", true},
    {tensor_kind::nextn_eh_proj, "nextn.eh_proj", true},
    {tensor_kind::nextn_enorm, "nextn.enorm", true},
    {tensor_kind::nextn_hnorm, "nextn.hnorm", true},
    {tensor_kind::nextn_shared_head_norm, "nextn.shared_head_norm", true},
    {tensor_kind::nextn_embed_tokens, "nextn.embed_tokens", true},
    {tensor_kind::nextn_shared_head_head, "nextn.shared_head_head", true},
    {tensor_kind::attn_q_a, "attn_q_a", true},
    {tensor_kind::attn_q_a_norm, "attn_q_a_norm", true},
    {tensor_kind::attn_q_b, "attn_q_b", true},
    {tensor_kind::attn_kv_a_mqa, "attn_kv_a_mqa", true},
    {tensor_kind::attn_kv_a_norm, "attn_kv_a_norm", true},
    {tensor_kind::attn_k_b, "attn_k_b", true},
    {tensor_kind::attn_v_b, "attn_v_b", true},
    {tensor_kind::exp_probs_b, "exp_probs_b", true},
}};

constexpr bool rows_in_order() {
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (static_cast<std::size_t>(names[i].kind) != i) {
            return false;
        }
    }
    return true;
}
static_assert(rows_in_order(), "one row per tensor_kind, in enum order");

const name_row& row(tensor_kind kind) noexcept { return names[static_cast<std::size_t>(kind)]; }

} // namespace

std::string_view base_name(tensor_kind kind) noexcept { return row(kind).base; }

bool is_layer_kind(tensor_kind kind) noexcept { return row(kind).per_layer; }

std::string_view suffix_name(tensor_suffix suffix) noexcept {
    return suffix == tensor_suffix::bias ? "bias" : suffix == tensor_suffix::none ? "" : "weight";
}

bool is_bare_kind(tensor_kind kind) noexcept { return row(kind).bare; }

std::string tensor_name(tensor_kind kind, tensor_suffix suffix) {
    std::string name(base_name(kind));
    if (!is_bare_kind(kind)) {
        name += '.';
        name += suffix_name(suffix);
    }
    return name;
}

std::string tensor_name(tensor_kind kind, std::uint32_t layer, tensor_suffix suffix) {
    std::string name = "blk.";
    name += std::to_string(layer);
    name += '.';
    name += base_name(kind);
    if (!is_bare_kind(kind)) {
        name += '.';
        name += suffix_name(suffix);
    }
    return name;
}

std::optional<tensor_kind> find_tensor_kind(std::string_view base) noexcept {
    for (const auto& r : names) {
        if (r.base == base) {
            return r.kind;
        }
    }
    return std::nullopt;
}

std::optional<parsed_tensor_name> parse_tensor_name(std::string_view name) noexcept {
    parsed_tensor_name out{};
    if (name.starts_with("blk.")) {
        name.remove_prefix(4);
        std::uint32_t layer = 0;
        const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
        if (ec != std::errc{} || end == name.data() || end == name.data() + name.size() || *end != '.') {
            return std::nullopt;
        }
        name.remove_prefix(static_cast<std::size_t>(end - name.data()) + 1);
        out.layer = layer;
    }
    if (const auto bare = find_tensor_kind(name); bare && is_bare_kind(*bare)) {
        if (is_layer_kind(*bare) != out.layer.has_value()) {
            return std::nullopt;
        }
        out.kind = *bare;
        out.suffix = tensor_suffix::none;
        return out;
    }
    const auto dot = name.rfind('.');
    if (dot == std::string_view::npos) {
        return std::nullopt;
    }
    const auto suffix = name.substr(dot + 1);
    if (suffix == "weight") {
        out.suffix = tensor_suffix::weight;
    } else if (suffix == "bias") {
        out.suffix = tensor_suffix::bias;
    } else {
        return std::nullopt;
    }
    const auto kind = find_tensor_kind(name.substr(0, dot));
    if (!kind || is_bare_kind(*kind) || is_layer_kind(*kind) != out.layer.has_value()) {
        return std::nullopt;
    }
    out.kind = *kind;
    return out;
}

} // namespace sluice::models
