// Architecture `qwen3moe`: Qwen3 MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): per-head q/k norms, renormalised top-k experts.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/forward.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.qk_norm = qk_norm_kind::per_head;
    default_expert_weights_norm(kv, hp, true);
    return require_experts(hp);
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        add_attention_tensors(hp, il, out);
        add_moe_tensors(hp, il, out);
    }
    return out;
}

bool forward_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    attention_block(ctx, il, m);
    return moe_block(ctx, il, m);
}

} // namespace

const architecture& qwen3moe_architecture() {
    static const architecture entry{"qwen3moe", &configure, &tensors, &forward_layer};
    return entry;
}

} // namespace sluice::models
