// Architecture `llama`: Llama 2/3, Mistral, and Mixtral-style MoE when expert_count > 0. RoPE pairs are
// interleaved: the converter permutes Q/K rows as llama.cpp's does.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/forward.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::normal;
    // Mixtral-style files keep the expert size in feed_forward_length and renormalise the top-k weights.
    default_expert_weights_norm(kv, hp, true);
    return {};
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        add_attention_tensors(hp, il, out);
        if (hp.is_moe()) {
            add_moe_tensors(hp, il, out);
        } else {
            add_dense_ffn_tensors(hp, il, out);
        }
    }
    return out;
}

bool forward_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    attention_block(ctx, il, m);
    if (ctx.hparams().is_moe()) {
        return moe_block(ctx, il, m);
    }
    dense_ffn_block(ctx, il, m);
    return true;
}

} // namespace

const architecture& llama_architecture() {
    static const architecture entry{"llama", &configure, &tensors, &forward_layer};
    return entry;
}

} // namespace sluice::models
