// Architecture `deepseek2`: DeepSeek-V2/V3/R1 and Kimi-K2. Multi-head latent attention over a latent cache (GGUF's
// split attn_k_b / attn_v_b), YaRN with its softmax correction, leading dense layers, then experts chosen by
// grouped sigmoid scores with a selection bias, scaled, beside shared experts added unweighted. NextN (MTP) layers,
// which llama.cpp's converter leaves out of deepseek2 files but its loader accepts, are loaded and not run.
#include "runtime/models/architecture.hpp"
#include "runtime/models/blocks.hpp"
#include "runtime/models/kv_cache.hpp"
#include "runtime/models/mla_block.hpp"
#include "runtime/models/moe_family_hparams.hpp"

namespace sluice::models {

namespace {

result<void> configure(const gguf::metadata& kv, model_hparams& hp) {
    hp.rope.layout = kernels::rope_layout::normal; // DeepSeek's interleaved pairs, on the weights as published
    if (hp.rope.ext_factor != 0.0f) {
        // The rotation keeps its magnitude (transformers: mscale / mscale_all_dim, 1 as published); the correction
        // goes into the softmax scale instead (read_mla_hparams).
        hp.rope.attn_factor = 1.0f;
        if (kv.contains(hp.arch + ".rope.scaling.yarn_attn_factor")) {
            auto a = kv.get_f32(hp.arch + ".rope.scaling.yarn_attn_factor");
            if (!a) {
                return a.error();
            }
            hp.rope.attn_factor = *a;
        }
    }
    if (auto r = require_experts(hp); !r) {
        return r;
    }
    if (auto r = read_nextn_layers(kv, hp); !r) { // MTP blocks when the converter kept them
        return r;
    }
    if (auto r = read_mla_hparams(kv, hp); !r) {
        return r;
    }
    return read_routing_hparams(kv, hp, false);
}

void add_mla_tensors(const model_hparams& hp, std::uint32_t il, std::vector<tensor_spec>& out) {
    const auto& m = hp.mla;
    const std::uint64_t heads = hp.n_head;
    const std::uint64_t qk = m.nope_dim + hp.rope.n_rot;
    out.push_back({tensor_name(tensor_kind::attn_norm, il), {hp.n_embd}, tensor_role::vector});
    if (m.q_lora_rank) {
        out.push_back({tensor_name(tensor_kind::attn_q_a, il), {hp.n_embd, m.q_lora_rank}, tensor_role::matrix});
        out.push_back({tensor_name(tensor_kind::attn_q_a_norm, il), {m.q_lora_rank}, tensor_role::vector});
        out.push_back({tensor_name(tensor_kind::attn_q_b, il), {m.q_lora_rank, heads * qk}, tensor_role::matrix});
    } else {
        out.push_back({tensor_name(tensor_kind::attn_q, il), {hp.n_embd, heads * qk}, tensor_role::matrix});
    }
    out.push_back({tensor_name(tensor_kind::attn_kv_a_mqa, il),
                   {hp.n_embd, m.kv_lora_rank + hp.rope.n_rot},
                   tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_kv_a_norm, il), {m.kv_lora_rank}, tensor_role::vector});
    out.push_back({tensor_name(tensor_kind::attn_k_b, il), {m.nope_dim, m.kv_lora_rank, heads}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_v_b, il), {m.kv_lora_rank, m.v_dim, heads}, tensor_role::matrix});
    out.push_back({tensor_name(tensor_kind::attn_output, il), {heads * m.v_dim, hp.n_embd}, tensor_role::matrix});
}

std::vector<tensor_spec> tensors(const model_hparams& hp) {
    std::vector<tensor_spec> out;
    add_global_tensors(hp, out);
    // The main stack, then any NextN blocks (a full layer, its routed experts left on disk, and the NextN tensors).
    for (std::uint32_t il = 0; il < hp.n_layer + hp.hybrid.nextn_layers; ++il) {
        add_mla_tensors(hp, il, out);
        out.push_back({tensor_name(tensor_kind::ffn_norm, il), {hp.n_embd}, tensor_role::vector});
        add_routed_ffn_tensors(hp, il, out);
        if (il >= hp.n_layer) {
            add_nextn_tensors(hp, il, out);
        }
    }
    return out;
}

// One row per position: the latent and the rotary key (no separate values).
std::vector<layer_cache_spec> cache_layout(const model_hparams& hp) {
    return std::vector<layer_cache_spec>(
        hp.n_layer, layer_cache_spec{hp.mla.kv_lora_rank + static_cast<std::uint32_t>(hp.rope.n_rot), 0, 0, 0});
}

layer_status forward_layer(layer_context& ctx, std::uint32_t il, const team_member& m) {
    mla_attention_block(ctx, il, m);
    if (ctx.hparams().moe_layer(il)) {
        return moe_block(ctx, il, m);
    }
    dense_ffn_block(ctx, il, m);
    return layer_status::finished();
}

} // namespace

const architecture& deepseek2_architecture() {
    static const architecture entry{"deepseek2", &configure, &tensors, &forward_layer, &cache_layout};
    return entry;
}

} // namespace sluice::models
