// Architecture `glm4moe`: GLM-4.5 / 4.6 / 4.7 and GLM-4.5-Air. GQA attention with q/k/v biases, optional per-head
// q/k norms and partial NeoX rotary; leading dense layers, then experts chosen by sigmoid scores with a selection
// bias (grouped when the file says so), scaled, beside a shared expert added unweighted; NextN (MTP) layers after
// the main stack, loaded and not run.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/moe_family_hparams.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.attn_bias = true;
    hp.qk_norm = qk_norm_kind::per_head; // when the file has the tensors (use_qk_norm)
    if (auto r = require_experts(hp); !r) {
        return r;
    }
    if (auto r = read_nextn_layers(kv, hp); !r) {
        return r;
    }
    return read_routing_hparams(kv, hp, true);
}

void add_layer(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    const auto bias = tensor_suffix::bias;
    out.push_back({tensor_name(tensor_kind::attn_norm, il), {hp.n_embd}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_q, il), {hp.n_embd, hp.q_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_k, il), {hp.n_embd, hp.kv_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_v, il), {hp.n_embd, hp.v_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_output, il), {hp.q_dim(), hp.n_embd}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_q, il, bias), {hp.q_dim()}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_k, il, bias), {hp.kv_dim()}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_v, il, bias), {hp.v_dim()}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_q_norm, il), {hp.head_dim}, tensor_role::vector, true});
    out.push_back({tensor_name(tensor_kind::attn_k_norm, il), {hp.head_dim}, tensor_role::vector, true});
    out.push_back({tensor_name(tensor_kind::attn_post_norm, il), {hp.n_embd}, tensor_role::vector});
    add_routed_ffn_tensors(hp, il, out);
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        add_layer(hp, il, out);
    }
    // The NextN blocks: a full layer (its routed experts stay on disk) plus the projection of [embedding; hidden].
    for (std::uint32_t il = hp.n_layer; il < hp.n_layer + hp.hybrid.nextn_layers; ++il) {
        add_layer(hp, il, out);
        add_nextn_tensors(hp, il, out);
    }
    return out;
}

layer_status forward_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    attention_block(ctx, il, m);
    if (ctx.hparams().moe_layer(il)) {
        return moe_block(ctx, il, m);
    }
    dense_ffn_block(ctx, il, m);
    return layer_status::finished();
}

} // namespace

const architecture& glm4moe_architecture() {
    static const architecture entry{"glm4moe", &configure, &tensors, &forward_layer};
    return entry;
}

} // namespace sluice::models
