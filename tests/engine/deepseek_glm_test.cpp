// DeepSeek-V3 / Kimi-K2 (deepseek2) and GLM-4.5 (glm4moe) at the engine: malformed files (inconsistent MLA ranks,
// missing MLA keys, group counts that do not divide the experts, missing tensors) are refused at load naming the
// key or tensor; the cache keeps one latent row per position and layer, which the planner counts; the presets at
// the published geometries plan.
#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/mkmodel/presets.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/models/kv_cache.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using kernels::quant_type;
using test::run_sync;
using test::tiny_model;

std::string load_error(const std::filesystem::path& path) {
    model_options o;
    o.n_ctx = 64;
    o.n_threads = 1;
    auto r = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    return r ? std::string() : r.error().message;
}

mkmodel::random_model_plan& plan_of(void* p) {
    return *static_cast<mkmodel::random_model_plan*>(p);
}

struct bad_key {
    std::string arch, tag, key;
    std::function<void(gguf::metadata&)> edit;
    std::string expected; ///< in the message
};

class deepseek_glm_bad_key : public ::testing::TestWithParam<bad_key> {};

TEST_P(deepseek_glm_bad_key, is_refused_naming_the_key) {
    const auto& c = GetParam();
    const auto path = tiny_model(c.arch, quant_type::q8_0, 1, "-" + c.tag, [&](void* p) { c.edit(plan_of(p).kv); });
    const auto e = load_error(path);
    EXPECT_NE(e.find(c.key), std::string::npos) << e;
    EXPECT_NE(e.find(c.expected), std::string::npos) << e;
}

INSTANTIATE_TEST_SUITE_P(
    keys, deepseek_glm_bad_key,
    ::testing::Values(
        bad_key{"deepseek2", "rank", "deepseek2.attention.key_length",
                [](gguf::metadata& kv) { kv.set_u32("deepseek2.attention.kv_lora_rank", 128); },
                "must equal kv_lora_rank + rope.dimension_count (192)"},
        bad_key{"deepseek2", "nomla", "deepseek2.attention.key_length_mla",
                [](gguf::metadata& kv) { kv.erase("deepseek2.attention.key_length_mla"); }, "llama.cpp's converter"},
        bad_key{"deepseek2", "kvheads", "deepseek2.attention.head_count_kv",
                [](gguf::metadata& kv) { kv.set_u32("deepseek2.attention.head_count_kv", 4); }, "must be 1"},
        bad_key{"deepseek2", "mlashort", "deepseek2.attention.key_length_mla",
                [](gguf::metadata& kv) { kv.set_u32("deepseek2.attention.key_length_mla", 64); },
                "must exceed rope.dimension_count"},
        bad_key{"deepseek2", "groups", "deepseek2.expert_group_count",
                [](gguf::metadata& kv) { kv.set_u32("deepseek2.expert_group_count", 3); }, "equal groups"},
        bad_key{"deepseek2", "gating", "deepseek2.expert_gating_func",
                [](gguf::metadata& kv) { kv.set_u32("deepseek2.expert_gating_func", 7); }, "not supported"},
        bad_key{"glm4moe", "used", "glm4moe.expert_group_used_count",
                [](gguf::metadata& kv) { kv.set_u32("glm4moe.expert_group_used_count", 2); },
                "between 1 and expert_group_count"},
        bad_key{"glm4moe", "dense", "glm4moe.leading_dense_block_count",
                [](gguf::metadata& kv) { kv.set_u32("glm4moe.leading_dense_block_count", 9); }, "exceeds"},
        bad_key{"glm4moe", "nextn", "glm4moe.nextn_predict_layers",
                [](gguf::metadata& kv) { kv.set_u32("glm4moe.nextn_predict_layers", 4); }, "less than block_count"}),
    [](const auto& info) { return info.param.arch + "_" + info.param.tag; });

TEST(deepseek_glm_load, missing_mla_and_selection_bias_tensors_are_named) {
    for (const std::string name : {"blk.1.attn_k_b.weight", "blk.2.exp_probs_b.bias", "blk.0.attn_kv_a_norm.weight"}) {
        const auto path = tiny_model("deepseek2", quant_type::q8_0, 1, "-no-" + name, [&](void* p) {
            auto& t = plan_of(p).tensors;
            std::erase_if(t, [&](const auto& x) { return x.spec.name == name; });
        });
        const auto e = load_error(path);
        EXPECT_NE(e.find("tensor " + name + ": missing"), std::string::npos) << e;
    }
}

TEST(deepseek_glm_load, an_attn_k_b_of_the_wrong_rank_is_named) {
    const auto path = tiny_model("deepseek2", quant_type::q8_0, 1, "-kb", [](void* p) {
        for (auto& t : plan_of(p).tensors) {
            if (t.spec.name == "blk.1.attn_k_b.weight") {
                t.spec.ne = {64, 128, 4};
            }
        }
    });
    const auto e = load_error(path);
    EXPECT_NE(e.find("tensor blk.1.attn_k_b.weight: shape [64, 128, 4], expected [64, 256, 4]"), std::string::npos)
        << e;
}

// One row of kv_lora_rank + rope dims per position and layer, no values: 3 layers of (256 + 64) F16 values.
TEST(deepseek_glm_cache, the_latent_cache_is_what_the_planner_counts) {
    const auto m = test::load_model(tiny_model("deepseek2", quant_type::q8_0), 16, 256, 1);
    const std::uint64_t row_bytes = (256 + 64) * 2;
    EXPECT_EQ(m->plan().kv_bytes, 3u * 256u * row_bytes);
}

// Every deepseek2 / glm4moe preset plans at its real geometry with the cache MLA keeps (for DeepSeek-V3 576 values
// per position and layer instead of the 40960 of decompressed keys and values).
TEST(deepseek_glm_presets, published_geometries_plan_and_count_their_cache) {
    for (const char* name : {"deepseek-v3", "kimi-k2", "glm-4.5", "glm-4.6", "glm-4.5-air"}) {
        const auto* p = mkmodel::find_preset(name);
        ASSERT_NE(p, nullptr) << name;
        mkmodel::random_model_spec spec;
        spec.hparams = p->hparams;
        spec.type = p->default_type;
        auto plan = mkmodel::plan_random_model(spec);
        ASSERT_TRUE(plan) << name << ": " << plan.error().message;
        const auto layout = models::cache_layout_of(*plan->arch, plan->hparams);
        const auto& hp = plan->hparams;
        const std::uint64_t per_pos = hp.mla.enabled() ? hp.mla.kv_lora_rank + hp.rope.n_rot : 2ull * hp.kv_dim();
        EXPECT_EQ(models::cache_bytes(layout, 4096, quant_type::f16), 4096ull * hp.n_layer * per_pos * 2) << name;
    }
    EXPECT_EQ(mkmodel::find_preset("deepseek-v3")->hparams.mla.kv_lora_rank + 64u, 576u);
}

} // namespace
} // namespace sluice
