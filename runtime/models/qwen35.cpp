// Architectures `qwen35moe` (Qwen3.5 / Qwen3.6 MoE: 35B-A3B, 122B-A10B, 397B-A17B), `qwen35` (Qwen3.5 dense) and
// `qwen3next` (Qwen3-Next-80B-A3B): Gated DeltaNet layers between gated full-attention layers, then routed experts
// with a sigmoid-gated shared expert (a SwiGLU FFN for qwen35), and an MTP block loaded but not run.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/hybrid_blocks.hpp"
#include "runtime/models/hybrid_hparams.hpp"
#include "runtime/models/kv_cache.hpp"
#include "runtime/models/tensor_names.hpp"
#include "runtime/models/tensor_plan.hpp"

namespace sluice::models {

namespace {

error key_error(const model_hparams& hp, std::string_view suffix, const std::string& why) {
    return make_error(std::errc::invalid_argument, "metadata key " + hp.arch + "." + std::string(suffix) + ": " + why);
}

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    const bool next = hp.arch == "qwen3next";
    hp.rope.layout = kernels::rope_layout::neox;
    hp.qk_norm = qk_norm_kind::per_head;
    hp.expert_weights_norm = true; // both renormalise the chosen experts' weights, whatever the file says
    if (auto r = read_hybrid_hparams(kv, hp, !next); !r) {
        return r;
    }
    hp.hybrid.tiled_value_heads = !next; // llama.cpp's qwen35 converter reorders the value heads
    hp.hybrid.fused_ba = next;
    if (hp.hybrid.fused_ba && hp.hybrid.time_step_rank > 512) {
        return key_error(hp, "ssm.time_step_rank", "more than 512 value heads with fused ssm_ba is not supported");
    }
    if (hp.arch != "qwen35") {
        if (auto r = require_experts(hp); !r) {
            return r;
        }
        if (hp.n_ff_shexp == 0) {
            return key_error(hp, "expert_shared_feed_forward_length", "missing or zero (the shared expert's size)");
        }
        hp.shared_expert = true;
    } else if (hp.is_moe()) {
        return key_error(hp, "expert_count", "qwen35 is the dense family (use qwen35moe)");
    }
    return {};
}

void add_gated_attention(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::attn_q, il), {hp.n_embd, 2ull * hp.q_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_k, il), {hp.n_embd, hp.kv_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_v, il), {hp.n_embd, hp.v_dim()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_output, il), {hp.q_dim(), hp.n_embd}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_q_norm, il), {hp.head_dim}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_k_norm, il), {hp.head_dim}, tensor_role::vector});
}

void add_delta_net(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    const auto& h = hp.hybrid;
    const std::uint64_t hv = h.time_step_rank;
    out.push_back({tensor_name(tensor_kind::attn_qkv, il), {hp.n_embd, h.conv_channels()}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_gate, il), {hp.n_embd, h.inner_size}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::ssm_conv1d, il), {h.conv_kernel, h.conv_channels()}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::ssm_dt, il, tensor_suffix::bias), {hv}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::ssm_a, il), {hv}, tensor_role::vector});
    if (h.fused_ba) {
        out.push_back({tensor_name(tensor_kind::ssm_ba, il), {hp.n_embd, 2 * hv}, tensor_role::matrix});
    } else {
        out.push_back({tensor_name(tensor_kind::ssm_alpha, il), {hp.n_embd, hv}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::ssm_beta, il), {hp.n_embd, hv}, tensor_role::matrix});
    }
    out.push_back({tensor_name(tensor_kind::ssm_norm, il), {h.state_size}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::ssm_out, il), {h.inner_size, hp.n_embd}, tensor_role::matrix});
}

void add_ffn(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::attn_post_norm, il), {hp.n_embd}, tensor_role::vector});
    if (hp.is_moe()) {
        add_moe_tensors(hp, il, out);
        add_shared_expert_tensors(hp, il, out);
    } else {
        add_dense_ffn_tensors(hp, il, out);
    }
}

/// The MTP block at layer `il`: a full-attention layer and FFN behind a projection of [embedding ; hidden].
void add_nextn(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    out.push_back({tensor_name(tensor_kind::attn_norm, il), {hp.n_embd}, tensor_role::vector});
    add_gated_attention(hp, il, out);
    add_ffn(hp, il, out);
    add_nextn_tensors(hp, il, out);
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        out.push_back({tensor_name(tensor_kind::attn_norm, il), {hp.n_embd}, tensor_role::vector});
        if (hp.hybrid.recurrent[il]) {
            add_delta_net(hp, il, out);
        } else {
            add_gated_attention(hp, il, out);
        }
        add_ffn(hp, il, out);
    }
    for (std::uint32_t i = 0; i < hp.hybrid.nextn_layers; ++i) {
        add_nextn(hp, hp.n_layer + i, out);
    }
    return out;
}

std::vector<layer_cache_spec> cache_layout(const model_hparams& hp) {
    std::vector<layer_cache_spec> out(hp.n_layer);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        if (hp.hybrid.recurrent[il]) {
            out[il].state_floats = hp.hybrid.state_floats();
        } else {
            out[il].k_dim = hp.kv_dim();
            out[il].v_dim = hp.v_dim();
        }
    }
    return out;
}

layer_status forward_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    if (ctx.hparams().hybrid.recurrent[il]) {
        delta_net_block(ctx, il, m);
    } else {
        gated_attention_block(ctx, il, m);
    }
    if (ctx.hparams().is_moe()) {
        return moe_block(ctx, il, m);
    }
    dense_ffn_block(ctx, il, m);
    return layer_status::finished();
}

} // namespace

const architecture& qwen35moe_architecture() {
    static const architecture entry{"qwen35moe", &configure, &tensors, &forward_layer, &cache_layout};
    return entry;
}

const architecture& qwen35_architecture() {
    static const architecture entry{"qwen35", &configure, &tensors, &forward_layer, &cache_layout};
    return entry;
}

const architecture& qwen3next_architecture() {
    static const architecture entry{"qwen3next", &configure, &tensors, &forward_layer, &cache_layout};
    return entry;
}

} // namespace sluice::models
