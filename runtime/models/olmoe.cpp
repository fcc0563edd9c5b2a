// Architecture `olmoe`: OLMoE: q/k RMSNorm over all heads at once, softmax routing without renormalisation.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/forward.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.qk_norm = qk_norm_kind::whole;
    default_expert_weights_norm(kv, hp, false);
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

const architecture& olmoe_architecture() {
    static const architecture entry{"olmoe", &configure, &tensors, &forward_layer};
    return entry;
}

} // namespace sluice::models
