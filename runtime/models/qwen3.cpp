// Architecture `qwen3`: Qwen3 dense models (per-head RMSNorm of q and k, NeoX RoPE).
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    (void)kv;
    hp.qk_norm = qk_norm_kind::per_head;
    return {};
}

} // namespace

const architecture& qwen3_architecture() {
    static const architecture entry{"qwen3", &configure, &decoder_tensors, &decoder_layer};
    return entry;
}

} // namespace sluice::models
