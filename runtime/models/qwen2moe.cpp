// Architecture `qwen2moe`: Qwen1.5-MoE / Qwen2-MoE (routed experts plus a sigmoid-gated shared expert, q/k/v biases).
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.attn_bias = true;
    hp.shared_expert = true;
    default_expert_weights_norm(kv, hp, false);
    if (hp.n_ff_shexp == 0) {
        return make_error(std::errc::invalid_argument,
                          "metadata key qwen2moe.expert_shared_feed_forward_length: missing or zero");
    }
    return require_experts(hp);
}

} // namespace

const architecture& qwen2moe_architecture() {
    static const architecture entry{"qwen2moe", &configure, &decoder_tensors, &decoder_layer};
    return entry;
}

} // namespace sluice::models
