// Shapes of the standard decoder tensors, by GGUF name, from the hyperparameters.
#include "runtime/models/tensor_plan.hpp"

namespace sluice::models {

std::string layer_tensor_name(std::uint32_t layer, std::string_view base, std::string_view suffix) {
    std::string name = "blk.";
    name += std::to_string(layer);
    name += '.';
    name += base;
    name += '.';
    name += suffix;
    return name;
}

void add_global_tensors(const model_hparams& hp, std::vector<tensor_spec>& out) {
    out.push_back({"token_embd.weight", {hp.n_embd, hp.n_vocab}, tensor_role::embedding});
    out.push_back({"output_norm.weight", {hp.n_embd}, tensor_role::vector});
    out.push_back({"output.weight", {hp.n_embd, hp.n_vocab}, tensor_role::matrix, true});
}

void add_attention_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({layer_tensor_name(il, "attn_norm"), {hp.n_embd}, tensor_role::vector});
    out.push_back({layer_tensor_name(il, "attn_q"), {hp.n_embd, hp.q_dim()}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "attn_k"), {hp.n_embd, hp.kv_dim()}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "attn_v"), {hp.n_embd, hp.v_dim()}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "attn_output"),
                   {std::uint64_t{hp.n_head} * hp.head_dim_v, hp.n_embd},
                   tensor_role::matrix});
    if (hp.attn_bias) {
        out.push_back({layer_tensor_name(il, "attn_q", "bias"), {hp.q_dim()}, tensor_role::vector});
        out.push_back({layer_tensor_name(il, "attn_k", "bias"), {hp.kv_dim()}, tensor_role::vector});
        out.push_back({layer_tensor_name(il, "attn_v", "bias"), {hp.v_dim()}, tensor_role::vector});
    }
    if (hp.qk_norm == qk_norm_kind::per_head) {
        out.push_back({layer_tensor_name(il, "attn_q_norm"), {hp.head_dim}, tensor_role::vector});
        out.push_back({layer_tensor_name(il, "attn_k_norm"), {hp.head_dim}, tensor_role::vector});
    } else if (hp.qk_norm == qk_norm_kind::whole) {
        out.push_back({layer_tensor_name(il, "attn_q_norm"), {hp.q_dim()}, tensor_role::vector});
        out.push_back({layer_tensor_name(il, "attn_k_norm"), {hp.kv_dim()}, tensor_role::vector});
    }
    out.push_back({layer_tensor_name(il, "ffn_norm"), {hp.n_embd}, tensor_role::vector});
}

void add_dense_ffn_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({layer_tensor_name(il, "ffn_gate"), {hp.n_embd, hp.n_ff}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "ffn_up"), {hp.n_embd, hp.n_ff}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "ffn_down"), {hp.n_ff, hp.n_embd}, tensor_role::matrix});
}

void add_moe_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({layer_tensor_name(il, "ffn_gate_inp"), {hp.n_embd, hp.n_expert}, tensor_role::router});
    out.push_back(
        {layer_tensor_name(il, "ffn_gate_exps"), {hp.n_embd, hp.n_ff_exp, hp.n_expert}, tensor_role::experts});
    out.push_back({layer_tensor_name(il, "ffn_up_exps"), {hp.n_embd, hp.n_ff_exp, hp.n_expert}, tensor_role::experts});
    out.push_back(
        {layer_tensor_name(il, "ffn_down_exps"), {hp.n_ff_exp, hp.n_embd, hp.n_expert}, tensor_role::experts});
}

void add_shared_expert_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({layer_tensor_name(il, "ffn_gate_inp_shexp"), {hp.n_embd}, tensor_role::router});
    out.push_back({layer_tensor_name(il, "ffn_gate_shexp"), {hp.n_embd, hp.n_ff_shexp}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "ffn_up_shexp"), {hp.n_embd, hp.n_ff_shexp}, tensor_role::matrix});
    out.push_back({layer_tensor_name(il, "ffn_down_shexp"), {hp.n_ff_shexp, hp.n_embd}, tensor_role::matrix});
}

std::vector<tensor_spec> decoder_tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        add_attention_tensors(hp, il, out);
        if (!hp.is_moe()) {
            add_dense_ffn_tensors(hp, il, out);
            continue;
        }
        add_moe_tensors(hp, il, out);
        if (hp.shared_expert) {
            add_shared_expert_tensors(hp, il, out);
        }
    }
    return out;
}

} // namespace sluice::models
