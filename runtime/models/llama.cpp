// Architecture `llama`: Llama 2/3, Mistral, and Mixtral-style MoE when expert_count > 0. RoPE pairs are
// interleaved: the converter permutes Q/K rows as llama.cpp's does.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::normal;
    // Mixtral-style files keep the expert size in feed_forward_length and renormalise the top-k weights.
    default_expert_weights_norm(kv, hp, true);
    return {};
}

} // namespace

const architecture& llama_architecture() {
    static const architecture entry{"llama", &configure, &decoder_tensors, &decoder_layer};
    return entry;
}

} // namespace sluice::models
