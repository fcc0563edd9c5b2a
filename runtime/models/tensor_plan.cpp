// Shapes of the standard decoder tensors, by GGUF name, from the hyperparameters.
#include "runtime/models/tensor_plan.hpp"

namespace sluice::models {

void add_global_tensors(const model_hparams& hp, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::token_embd), {hp.n_embd, hp.n_vocab}, tensor_role::embedding});
    out.push_back({tensor_name(tensor_kind::output_norm), {hp.n_embd}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::output), {hp.n_embd, hp.n_vocab}, tensor_role::matrix, true});
}

void add_attention_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::attn_norm, il), {hp.n_embd}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_q, il), {hp.n_embd, hp.q_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_k, il), {hp.n_embd, hp.kv_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_v, il), {hp.n_embd, hp.v_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_output, il),
                   {std::uint64_t{hp.n_head} * hp.head_dim_v, hp.n_embd},
                   tensor_role::matrix});
    if (hp.attn_bias) {
        out.push_back({tensor_name(tensor_kind::attn_q, il, tensor_suffix::bias), {hp.q_dim()}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_k, il, tensor_suffix::bias), {hp.kv_dim()}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_v, il, tensor_suffix::bias), {hp.v_dim()}, tensor_role::vector});
    }
    if (hp.qk_norm == qk_norm_kind::per_head) {
        out.push_back({tensor_name(tensor_kind::attn_q_norm, il), {hp.head_dim}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_k_norm, il), {hp.head_dim}, tensor_role::vector});
    } else if (hp.qk_norm == qk_norm_kind::whole) {
        out.push_back({tensor_name(tensor_kind::attn_q_norm, il), {hp.q_dim()}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_k_norm, il), {hp.kv_dim()}, tensor_role::vector});
    }
    out.push_back({tensor_name(tensor_kind::ffn_norm, il), {hp.n_embd}, tensor_role::vector});
}

void add_dense_ffn_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::ffn_gate, il), {hp.n_embd, hp.n_ff}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::ffn_up, il), {hp.n_embd, hp.n_ff}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::ffn_down, il), {hp.n_ff, hp.n_embd}, tensor_role::matrix});
}

void add_moe_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::ffn_gate_inp, il), {hp.n_embd, hp.n_expert}, tensor_role::router});
    out.push_back(
        {tensor_name(tensor_kind::ffn_gate_exps, il), {hp.n_embd, hp.n_ff_exp, hp.n_expert}, tensor_role::experts});
    out.push_back({tensor_name(tensor_kind::ffn_up_exps, il), {hp.n_embd, hp.n_ff_exp, hp.n_expert}, tensor_role::experts});
    out.push_back(
        {tensor_name(tensor_kind::ffn_down_exps, il), {hp.n_ff_exp, hp.n_embd, hp.n_expert}, tensor_role::experts});
}

void add_shared_expert_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::ffn_gate_inp_shexp, il), {hp.n_embd}, tensor_role::router});
    out.push_back({tensor_name(tensor_kind::ffn_gate_shexp, il), {hp.n_embd, hp.n_ff_shexp}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::ffn_up_shexp, il), {hp.n_embd, hp.n_ff_shexp}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::ffn_down_shexp, il), {hp.n_ff_shexp, hp.n_embd}, tensor_role::matrix});
}

void add_routed_ffn_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    if (!hp.moe_layer(il)) {
        add_dense_ffn_tensors(hp, il, out);
        return;
    }
    add_moe_tensors(hp, il, out);
    if (hp.routing.scoring == kernels::router_scoring::sigmoid) {
        out.push_back({tensor_name(tensor_kind::exp_probs_b, il, tensor_suffix::bias), {hp.n_expert},
                       tensor_role::vector});
    }
    if (hp.routing.shared_count > 0) {
        out.push_back({tensor_name(tensor_kind::ffn_gate_shexp, il), {hp.n_embd, hp.n_ff_shexp}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::ffn_up_shexp, il), {hp.n_embd, hp.n_ff_shexp}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::ffn_down_shexp, il), {hp.n_ff_shexp, hp.n_embd}, tensor_role::matrix});
    }
}

void add_nextn_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::nextn_eh_proj, il), {2ull * hp.n_embd, hp.n_embd}, tensor_role::matrix});
    for (const auto kind : {tensor_kind::nextn_enorm, tensor_kind::nextn_hnorm, tensor_kind::nextn_shared_head_norm}) {
        out.push_back({tensor_name(kind, il), {hp.n_embd}, tensor_role::vector});
    }
    out.push_back(
        {tensor_name(tensor_kind::nextn_embed_tokens, il), {hp.n_embd, hp.n_vocab}, tensor_role::embedding, true});
    out.push_back(
        {tensor_name(tensor_kind::nextn_shared_head_head, il), {hp.n_embd, hp.n_vocab}, tensor_role::matrix, true});
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
