// Architecture `qwen3`: Qwen3 dense models (per-head RMSNorm of q and k, NeoX RoPE).
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/forward.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    (void)kv;
    hp.qk_norm = qk_norm_kind::per_head;
    return {};
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        add_attention_tensors(hp, il, out);
        add_dense_ffn_tensors(hp, il, out);
    }
    return out;
}

bool forward_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    attention_block(ctx, il, m);
    dense_ffn_block(ctx, il, m);
    return true;
}

} // namespace

const architecture& qwen3_architecture() {
    static const architecture entry{"qwen3", &configure, &tensors, &forward_layer};
    return entry;
}

} // namespace sluice::models
