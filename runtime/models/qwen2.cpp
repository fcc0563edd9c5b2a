// Architecture `qwen2`: Qwen2 / Qwen2.5 dense models (q/k/v biases, NeoX RoPE).
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    (void)kv;
    hp.attn_bias = true;
    return {};
}

} // namespace

const architecture& qwen2_architecture() {
    static const architecture entry{"qwen2", &configure, &decoder_tensors, &decoder_layer};
    return entry;
}

} // namespace sluice::models
