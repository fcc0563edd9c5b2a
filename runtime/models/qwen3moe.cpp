// Architecture `qwen3moe`: Qwen3 MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): per-head q/k norms, renormalised top-k experts.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.qk_norm = qk_norm_kind::per_head;
    default_expert_weights_norm(kv, hp, true);
    return require_experts(hp);
}

} // namespace

const architecture& qwen3moe_architecture() {
    static const architecture entry{"qwen3moe", &configure, &decoder_tensors, &decoder_layer};
    return entry;
}

} // namespace sluice::models
