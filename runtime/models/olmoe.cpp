// Architecture `olmoe`: OLMoE: q/k RMSNorm over all heads at once, softmax routing without renormalisation.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.qk_norm = qk_norm_kind::whole;
    default_expert_weights_norm(kv, hp, false);
    return require_experts(hp);
}

} // namespace

const architecture& olmoe_architecture() {
    static const architecture entry{"olmoe", &configure, &decoder_tensors, &decoder_layer};
    return entry;
}

} // namespace sluice::models
