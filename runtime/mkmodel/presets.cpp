// The preset table. Real geometries follow the models' config.json files; tiny presets keep every row a
// multiple of 256 so every weight type (K-quants included) applies.
#include "runtime/mkmodel/presets.hpp"

#include <cmath>
#include <vector>

namespace sluice::mkmodel {

namespace {

using kernels::quant_type;

/// The shape fields of a preset, named as in config.json.
struct geometry {
    const char* arch;
    std::uint32_t layers;
    std::uint32_t embd;
    std::uint32_t heads;
    std::uint32_t kv_heads;
    std::uint32_t head_dim;
    std::uint32_t ff;       ///< dense (or, for llama MoE, expert) feed-forward size
    std::uint32_t experts;  ///< 0: dense
    std::uint32_t used;     ///< experts per token
    std::uint32_t ff_exp;   ///< routed expert feed-forward size
    std::uint32_t ff_shexp; ///< shared expert feed-forward size (qwen2moe)
    std::uint32_t vocab;
    std::uint32_t ctx;
    float rope_base;
    float eps;
};

models::model_hparams make_hparams(const geometry& g) {
    models::model_hparams hp;
    hp.arch = g.arch;
    hp.n_layer = g.layers;
    hp.n_embd = g.embd;
    hp.n_head = g.heads;
    hp.n_head_kv = g.kv_heads;
    hp.head_dim = g.head_dim;
    hp.head_dim_v = g.head_dim;
    hp.n_ff = g.ff;
    hp.n_expert = g.experts;
    hp.n_expert_used = g.used;
    hp.n_ff_exp = g.experts ? g.ff_exp : 0;
    hp.n_ff_shexp = g.ff_shexp;
    hp.n_vocab = g.vocab;
    hp.n_ctx_train = g.ctx;
    hp.rope.n_rot = g.head_dim;
    hp.rope.freq_base = g.rope_base;
    hp.rms_eps = g.eps;
    return hp;
}

/// gpt-oss's extras on a geometry: a 128-token window on every other layer and YaRN as published (factor 32 over
/// 4096 positions, betas 32 and 1, unrounded: the gpt-oss architecture's default).
models::model_hparams with_gpt_oss(models::model_hparams hp, std::uint32_t window) {
    hp.gpt_oss.sliding_window = window;
    hp.rope.ext_factor = 1.0f;
    hp.rope.freq_scale = 1.0f / 32.0f;
    hp.rope.n_ctx_orig = 4096;
    hp.rope.beta_fast = 32.0f;
    hp.rope.beta_slow = 1.0f;
    hp.rope.attn_factor = static_cast<float>(0.1 * std::log(32.0) + 1.0);
    return hp;
}

/// The gpt-oss presets: 2880-wide rows fit Q8_0 blocks (not K-quant super-blocks); experts in MXFP4.
void add_gpt_oss_presets(std::vector<model_preset>& out) {
    // clang-format off
    const geometry g20 = {"gpt-oss", 24, 2880, 64, 8, 64, 2880, 32, 4, 2880, 0, 201088, 131072, 150000.0f, 1e-5f};
    const geometry g120 = {"gpt-oss", 36, 2880, 64, 8, 64, 2880, 128, 4, 2880, 0, 201088, 131072, 150000.0f, 1e-5f};
    const geometry tiny = {"gpt-oss", 2, 256, 4, 2, 64, 256, 8, 4, 256, 0, 1024, 4096, 150000.0f, 1e-5f};
    // clang-format on
    out.insert(out.begin() + 2,
               {{"gpt-oss-20b", "gpt-oss-20b: 24 layers, 32 experts (4 used), MXFP4 experts, 128-token windows",
                 with_gpt_oss(make_hparams(g20), 128), quant_type::q8_0, false, quant_type::mxfp4},
                {"gpt-oss-120b", "gpt-oss-120b: 36 layers, 128 experts (4 used), MXFP4 experts, 128-token windows",
                 with_gpt_oss(make_hparams(g120), 128), quant_type::q8_0, false, quant_type::mxfp4}});
    out.push_back({"tiny-gpt-oss", "test model: gpt-oss, 2 layers (windowed, full), 8 experts (4 used)",
                   with_gpt_oss(make_hparams(tiny), 16), quant_type::q8_0, false, quant_type::mxfp4});
}

/// The Gated DeltaNet fields of a hybrid preset (Qwen3.5 / Qwen3-Next config.json: linear_* fields,
/// full_attention_interval, partial_rotary_factor 0.25, mrope_section, one MTP block).
struct hybrid_geometry {
    std::uint32_t key_heads;   ///< linear_num_key_heads
    std::uint32_t value_heads; ///< linear_num_value_heads
    std::uint32_t head_dim;    ///< linear_key_head_dim = linear_value_head_dim
    std::uint32_t interval;    ///< full_attention_interval
    bool sections;             ///< M-RoPE sections (Qwen3.5)
};

models::model_hparams make_hybrid_hparams(const geometry& g, const hybrid_geometry& h) {
    auto hp = make_hparams(g);
    hp.rope.n_rot = g.head_dim / 4;
    auto& hy = hp.hybrid;
    hy.conv_kernel = 4;
    hy.state_size = h.head_dim;
    hy.group_count = h.key_heads;
    hy.time_step_rank = h.value_heads;
    hy.inner_size = h.value_heads * h.head_dim;
    for (std::uint32_t l = 0; l < g.layers; ++l) {
        hy.recurrent.push_back((l + 1) % h.interval != 0);
    }
    if (h.sections) { // mrope_section [11, 11, 10] of 32 frequencies, scaled to the preset's rotated dimensions
        const std::uint32_t half = hp.rope.n_rot / 2;
        hy.rope_sections = {half * 11 / 32, half * 11 / 32, half - 2 * (half * 11 / 32), 0};
    }
    hy.nextn_layers = 1;
    return hp;
}

void add_hybrid_presets(std::vector<model_preset>& out) {
    struct row {
        const char* name;
        const char* description;
        geometry g;
        hybrid_geometry h;
        quant_type type;
    };
    // clang-format off
    const row rows[] = {
        {"qwen3.5-35b-a3b", "Qwen3.5/3.6-35B-A3B: 40 layers (30 Gated DeltaNet), 256 experts (8 used) + shared, MTP",
         {"qwen35moe", 40, 2048, 16, 2, 256, 0, 256, 8, 512, 512, 248320, 262144, 1e7f, 1e-6f}, {16, 32, 128, 4, true},
         quant_type::q4_k},
        {"qwen3.5-122b-a10b", "Qwen3.5-122B-A10B: 48 layers (36 Gated DeltaNet), 256 experts (8 used) + shared, MTP",
         {"qwen35moe", 48, 3072, 32, 2, 256, 0, 256, 8, 1024, 1024, 248320, 262144, 1e7f, 1e-6f}, {16, 64, 128, 4, true},
         quant_type::q4_k},
        {"qwen3.5-397b-a17b", "Qwen3.5-397B-A17B: 60 layers (45 Gated DeltaNet), 512 experts (10 used) + shared, MTP",
         {"qwen35moe", 60, 4096, 32, 2, 256, 0, 512, 10, 1024, 1024, 248320, 262144, 1e7f, 1e-6f}, {16, 64, 128, 4, true},
         quant_type::q4_k},
        {"tiny-qwen35moe", "test model: qwen35moe, 4 layers (3 Gated DeltaNet), 8 experts (2 used) + shared, MTP",
         {"qwen35moe", 4, 256, 4, 2, 64, 0, 8, 2, 256, 256, 1024, 4096, 1e7f, 1e-6f}, {2, 4, 64, 4, true},
         quant_type::q4_k},
        {"tiny-qwen35", "test model: qwen35, 4 dense layers (3 Gated DeltaNet), MTP",
         {"qwen35", 4, 256, 4, 2, 64, 512, 0, 0, 0, 0, 1024, 4096, 1e7f, 1e-6f}, {2, 4, 64, 4, true}, quant_type::q4_k},
        {"tiny-qwen3next", "test model: qwen3next, 4 layers (3 Gated DeltaNet), 8 experts (2 used) + shared, MTP",
         {"qwen3next", 4, 256, 4, 2, 64, 0, 8, 2, 256, 256, 1024, 4096, 1e7f, 1e-6f}, {2, 4, 64, 4, false},
         quant_type::q4_k},
    };
    // clang-format on
    for (const row& r : rows) {
        out.push_back({r.name, r.description, make_hybrid_hparams(r.g, r.h), r.type, false});
    }
}

/// MLA sizes of a deepseek2 preset (config.json: q_lora_rank, kv_lora_rank, qk_nope/rope_head_dim, v_head_dim).
struct mla_geometry {
    std::uint32_t q_rank, kv_rank, nope, rope, v;
};

/// Routing and layout of a deepseek2 / glm4moe preset (n_group, topk_group, routed_scaling_factor,
/// first_k_dense_replace, n_shared_experts) and YaRN (factor over original_max_position_embeddings; 0: none).
struct routing_geometry {
    std::uint32_t groups, groups_used;
    float scale;
    std::uint32_t leading_dense, shared;
    float yarn_factor;
    std::uint32_t yarn_original;
    std::uint32_t nextn = 0; ///< NextN (MTP) blocks after the main stack
};

models::model_hparams with_routing(models::model_hparams hp, const routing_geometry& r) {
    hp.routing.scoring = kernels::router_scoring::sigmoid;
    hp.routing.n_groups = r.groups;
    hp.routing.groups_used = r.groups_used;
    hp.routing.weights_scale = r.scale;
    hp.routing.leading_dense = r.leading_dense;
    hp.routing.shared_count = r.shared;
    hp.n_ff_shexp = hp.n_ff_exp * r.shared;
    hp.shared_expert = true;
    hp.expert_weights_norm = true;
    if (r.yarn_factor > 1.0f) { // DeepSeek's YaRN: betas 32 and 1, mscale = mscale_all_dim = 1
        hp.rope.ext_factor = 1.0f;
        hp.rope.freq_scale = 1.0f / r.yarn_factor;
        hp.rope.n_ctx_orig = r.yarn_original;
        hp.rope.attn_factor = kernels::yarn_mscale(r.yarn_factor);
        hp.mla.yarn_log_multiplier = 0.1f;
    }
    return hp;
}

models::model_hparams make_mla_hparams(const geometry& g, const mla_geometry& m, const routing_geometry& r) {
    auto hp = with_routing(make_hparams(g), r);
    hp.n_head_kv = 1;
    hp.head_dim = m.kv_rank + m.rope;
    hp.head_dim_v = m.kv_rank;
    hp.rope.n_rot = m.rope;
    hp.mla.q_lora_rank = m.q_rank;
    hp.mla.kv_lora_rank = m.kv_rank;
    hp.mla.nope_dim = m.nope;
    hp.mla.v_dim = m.v;
    return hp;
}

/// DeepSeek-V3 / Kimi-K2 (deepseek2: MLA, Q8_0 since attn_k_b's 128-value rows do not fit K-quant super-blocks) and
/// GLM-4.5 / 4.6 / 4.5-Air (glm4moe, half-rotary heads of 128, one NextN layer; no q/k norms, which llama.cpp's
/// files have only for use_qk_norm).
void add_moe_family_presets(std::vector<model_preset>& out) {
    struct row {
        const char* name;
        const char* description;
        geometry g;
        mla_geometry m; ///< all 0 for glm4moe
        routing_geometry r;
        quant_type type;
    };
    // clang-format off
    const row rows[] = {
        {"deepseek-v3", "DeepSeek-V3/R1: 61 layers (3 dense), MLA, 256 experts (8 used, 4 of 8 groups) + shared",
         {"deepseek2", 61, 7168, 128, 1, 0, 18432, 256, 8, 2048, 0, 129280, 163840, 10000.0f, 1e-6f},
         {1536, 512, 128, 64, 128}, {8, 4, 2.5f, 3, 1, 40.0f, 4096}, quant_type::q8_0},
        {"kimi-k2", "Kimi-K2: 61 layers (1 dense), MLA with 64 heads, 384 experts (8 used) + shared",
         {"deepseek2", 61, 7168, 64, 1, 0, 18432, 384, 8, 2048, 0, 163840, 131072, 50000.0f, 1e-6f},
         {1536, 512, 128, 64, 128}, {1, 1, 2.827f, 1, 1, 32.0f, 4096}, quant_type::q8_0},
        {"tiny-deepseek2", "test model: deepseek2, 3 layers (1 dense) + NextN, MLA, 8 experts (2 used, 4 groups)",
         {"deepseek2", 3, 256, 4, 1, 0, 512, 8, 2, 256, 0, 1024, 4096, 10000.0f, 1e-6f},
         {256, 256, 64, 64, 64}, {4, 2, 2.5f, 1, 1, 4.0f, 1024, 1}, quant_type::q8_0},
        {"glm-4.5", "GLM-4.5: 92 layers (3 dense) + NextN, 160 experts (8 used) + shared",
         {"glm4moe", 92, 5120, 96, 8, 128, 12288, 160, 8, 1536, 0, 151552, 131072, 1e6f, 1e-5f},
         {}, {1, 1, 2.5f, 3, 1, 0.0f, 0, 1}, quant_type::q4_k},
        {"glm-4.6", "GLM-4.6: 92 layers (3 dense) + NextN, 160 experts (8 used) + shared, 200K context",
         {"glm4moe", 92, 5120, 96, 8, 128, 12288, 160, 8, 1536, 0, 151552, 202752, 1e6f, 1e-5f},
         {}, {1, 1, 2.5f, 3, 1, 0.0f, 0, 1}, quant_type::q4_k},
        {"glm-4.5-air", "GLM-4.5-Air: 46 layers (1 dense) + NextN, 128 experts (8 used) + shared",
         {"glm4moe", 46, 4096, 96, 8, 128, 10944, 128, 8, 1408, 0, 151552, 131072, 1e6f, 1e-5f},
         {}, {1, 1, 1.0f, 1, 1, 0.0f, 0, 1}, quant_type::q8_0},
        {"tiny-glm4moe", "test model: glm4moe, 3 layers (1 dense) + NextN, 8 experts (2 used) + shared",
         {"glm4moe", 3, 256, 4, 2, 64, 512, 8, 2, 256, 0, 1024, 4096, 1e6f, 1e-5f},
         {}, {1, 1, 2.5f, 1, 1, 0.0f, 0, 1}, quant_type::q4_k},
    };
    // clang-format on
    for (const row& r : rows) {
        auto hp = r.m.kv_rank ? make_mla_hparams(r.g, r.m, r.r) : with_routing(make_hparams(r.g), r.r);
        hp.hybrid.nextn_layers = r.r.nextn;
        if (!r.m.kv_rank) {
            hp.rope.n_rot = r.g.head_dim / 2; // partial_rotary_factor 0.5
        }
        out.push_back({r.name, r.description, hp, r.type, false});
    }
}

std::vector<model_preset> build_presets() {
    struct row {
        const char* name;
        const char* description;
        geometry g;
        quant_type type;
        bool tied;
    };
    // clang-format off
    const row rows[] = {
        {"qwen3-30b-a3b", "Qwen3-30B-A3B: 48 layers, 128 experts (8 used)",
         {"qwen3moe", 48, 2048, 32, 4, 128, 6144, 128, 8, 768, 0, 151936, 40960, 1e6f, 1e-6f}, quant_type::q4_k, false},
        {"qwen3-235b-a22b", "Qwen3-235B-A22B: 94 layers, 128 experts (8 used)",
         {"qwen3moe", 94, 4096, 64, 4, 128, 12288, 128, 8, 1536, 0, 151936, 40960, 1e6f, 1e-6f},
         quant_type::q4_k, false},
        {"mixtral-8x7b", "Mixtral-8x7B: 32 layers, 8 experts (2 used)",
         {"llama", 32, 4096, 32, 8, 128, 14336, 8, 2, 14336, 0, 32000, 32768, 1e6f, 1e-5f}, quant_type::q4_k, false},
        {"olmoe-1b-7b", "OLMoE-1B-7B: 16 layers, 64 experts (8 used)",
         {"olmoe", 16, 2048, 16, 16, 128, 1024, 64, 8, 1024, 0, 50304, 4096, 1e4f, 1e-5f}, quant_type::q4_k, false},
        {"qwen2-moe-a2.7b", "Qwen1.5-MoE-A2.7B: 24 layers, 60 experts (4 used) and a shared expert",
         {"qwen2moe", 24, 2048, 16, 16, 128, 5632, 60, 4, 1408, 5632, 151936, 8192, 1e6f, 1e-6f},
         quant_type::q8_0, false},
        {"qwen3-0.6b", "Qwen3-0.6B: 28 dense layers",
         {"qwen3", 28, 1024, 16, 8, 128, 3072, 0, 0, 0, 0, 151936, 40960, 1e6f, 1e-6f}, quant_type::q4_k, true},
        {"llama3-1b-ish", "Llama-3.2-1B shape: 16 dense layers (no llama3 rope scaling)",
         {"llama", 16, 2048, 32, 8, 64, 8192, 0, 0, 0, 0, 128256, 131072, 5e5f, 1e-5f}, quant_type::q4_k, true},
        {"qwen2-0.5b", "Qwen2-0.5B: 24 dense layers, q/k/v biases",
         {"qwen2", 24, 896, 14, 2, 64, 4864, 0, 0, 0, 0, 151936, 32768, 1e6f, 1e-6f}, quant_type::q8_0, true},
        {"tiny-llama", "test model: llama, 2 dense layers",
         {"llama", 2, 256, 4, 2, 64, 512, 0, 0, 0, 0, 1024, 4096, 1e4f, 1e-5f}, quant_type::q4_k, false},
        {"tiny-mixtral", "test model: llama MoE, 2 layers, 8 experts (2 used)",
         {"llama", 2, 256, 4, 2, 64, 256, 8, 2, 256, 0, 1024, 4096, 1e6f, 1e-5f}, quant_type::q4_k, false},
        {"tiny-qwen2", "test model: qwen2, 2 dense layers",
         {"qwen2", 2, 256, 4, 2, 64, 512, 0, 0, 0, 0, 1024, 4096, 1e6f, 1e-6f}, quant_type::q4_k, false},
        {"tiny-qwen3", "test model: qwen3, 2 dense layers",
         {"qwen3", 2, 256, 4, 2, 64, 512, 0, 0, 0, 0, 1024, 4096, 1e6f, 1e-6f}, quant_type::q4_k, false},
        {"tiny-qwen2moe", "test model: qwen2moe, 2 layers, 8 experts (2 used) and a shared expert",
         {"qwen2moe", 2, 256, 4, 4, 64, 512, 8, 2, 256, 512, 1024, 4096, 1e6f, 1e-6f}, quant_type::q4_k, false},
        {"tiny-qwen3moe", "test model: qwen3moe, 2 layers, 8 experts (2 used)",
         {"qwen3moe", 2, 256, 4, 2, 64, 512, 8, 2, 256, 0, 1024, 4096, 1e6f, 1e-6f}, quant_type::q4_k, false},
        {"tiny-olmoe", "test model: olmoe, 2 layers, 8 experts (2 used)",
         {"olmoe", 2, 256, 4, 4, 64, 256, 8, 2, 256, 0, 1024, 4096, 1e4f, 1e-5f}, quant_type::q4_k, false},
    };
    // clang-format on
    std::vector<model_preset> out;
    for (const row& r : rows) {
        out.push_back({r.name, r.description, make_hparams(r.g), r.type, r.tied, std::nullopt});
    }
    add_gpt_oss_presets(out);
    add_hybrid_presets(out);
    add_moe_family_presets(out);
    return out;
}

} // namespace

std::span<const model_preset> model_presets() {
    static const std::vector<model_preset> all = build_presets();
    return all;
}

const model_preset* find_preset(std::string_view name) noexcept {
    for (const auto& p : model_presets()) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

} // namespace sluice::mkmodel
