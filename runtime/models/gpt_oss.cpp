// Architecture `gpt-oss`: OpenAI's gpt-oss (llama.cpp's openai-moe). Pre-norm attention with biases, per-head
// sinks and a sliding window on alternating layers (the even ones), YaRN rope without rounding; a MoE block with a
// biased router (softmax over the top-k raw logits) and biased experts through a clamped SwiGLU.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/kv_cache.hpp"

#include <string>

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::neox;
    hp.rope.yarn_truncate = false; // as gpt-oss is published (rope_scaling.truncate false)
    hp.attn_bias = true;
    auto& g = hp.gpt_oss;
    g.swiglu_alpha = 1.702f;
    g.swiglu_limit = 7.0f;
    g.softmax_of_chosen = true;
    const std::string window_key = hp.arch + ".attention.sliding_window";
    auto window = kv.get_u32(window_key);
    if (!window) {
        return window.error();
    }
    if (*window == 0) {
        return make_error(std::errc::invalid_argument, "metadata key " + window_key + ": must be positive");
    }
    g.sliding_window = *window;
    const std::string pattern_key = hp.arch + ".attention.sliding_window_pattern";
    auto period = kv.find_u32(pattern_key);
    if (!period) {
        return make_error(std::errc::not_supported,
                          "metadata key " + pattern_key + ": expected a layer period (" + period.error().message + ")");
    }
    g.swa_period = period->value_or(2);
    if (g.swa_period == 0) {
        return make_error(std::errc::invalid_argument, "metadata key " + pattern_key + ": must be positive");
    }
    return require_experts(hp);
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    const std::uint64_t e = hp.n_expert;
    const auto bias = tensor_suffix::bias;
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        out.push_back({tensor_name(tensor_kind::attn_norm, il), {hp.n_embd}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_post_norm, il), {hp.n_embd}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_q, il), {hp.n_embd, hp.q_dim()}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::attn_k, il), {hp.n_embd, hp.kv_dim()}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::attn_v, il), {hp.n_embd, hp.v_dim()}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::attn_output, il),
                       {std::uint64_t{hp.n_head} * hp.head_dim_v, hp.n_embd},
                       tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::attn_sinks, il), {hp.n_head}, tensor_role::vector});
        add_moe_tensors(hp, il, out);
        out.push_back({tensor_name(tensor_kind::attn_q, il, bias), {hp.q_dim()}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_k, il, bias), {hp.kv_dim()}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_v, il, bias), {hp.v_dim()}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_output, il, bias), {hp.n_embd}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::ffn_gate_inp, il, bias), {e}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::ffn_gate_exps, il, bias), {hp.n_ff_exp, e}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::ffn_up_exps, il, bias), {hp.n_ff_exp, e}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::ffn_down_exps, il, bias), {hp.n_embd, e}, tensor_role::vector});
    }
    return out;
}

// Keys and values of every position, or of the window's positions on the windowed layers.
std::vector<layer_cache_spec> cache_layout(const model_hparams& hp) {
    std::vector<layer_cache_spec> layout = attention_cache_layout(hp);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        if (hp.gpt_oss.windowed(il)) {
            layout[il].window = hp.gpt_oss.sliding_window;
        }
    }
    return layout;
}

} // namespace

const architecture& gpt_oss_architecture() {
    static const architecture entry{"gpt-oss", &configure, &tensors, &decoder_layer, &cache_layout};
    return entry;
}

} // namespace sluice::models
