// config.json of DeepSeek-V3 / Kimi-K2 and GLM-4.5 (the reference fixtures transformers 5.17 wrote, and the
// transformers 4 spellings published checkpoints carry) into GGUF hyperparameters; inconsistent MLA ranks, expert
// groups and quantization settings are errors naming the field.
#include "runtime/convert/hf_config.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace sluice;

const fs::path reference_dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";

json::object fixture_config(const char* name) {
    std::ifstream in(reference_dir / name / "config.json");
    return json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
}

result<convert::hf_model_config> parse(const json::object& o) {
    return convert::parse_hf_config(json::serialize(o));
}

result<convert::hf_model_config> parse_edited(const char* name, const std::function<void(json::object&)>& edit) {
    auto c = fixture_config(name);
    edit(c);
    return parse(c);
}

void expect_error_naming(const result<convert::hf_model_config>& r, const std::string& field) {
    ASSERT_FALSE(r) << "expected an error naming " << field;
    EXPECT_NE(r.error().message.find(field), std::string::npos) << r.error().message;
}

TEST(moe_family_config, deepseek_v3_fixture_gives_mla_view_groups_yarn_and_nextn) {
    auto cfg = parse(fixture_config("deepseek_v3"));
    ASSERT_TRUE(cfg) << cfg.error().message;
    const auto& hp = cfg->hp;
    EXPECT_EQ(cfg->family, convert::hf_family::deepseek2);
    EXPECT_EQ(hp.arch, "deepseek2");
    // llama.cpp's view: one KV head whose key is latent + rotary key and whose value is the latent.
    EXPECT_EQ(hp.n_head, 4u);
    EXPECT_EQ(hp.n_head_kv, 1u);
    EXPECT_EQ(hp.head_dim, 16u + 8u);
    EXPECT_EQ(hp.head_dim_v, 16u);
    EXPECT_EQ(hp.rope.n_rot, 8u);
    EXPECT_EQ(hp.n_ff, 128u);
    EXPECT_EQ(hp.n_expert, 8u);
    EXPECT_EQ(hp.n_expert_used, 2u);
    EXPECT_EQ(hp.n_ff_exp, 32u);
    EXPECT_EQ(hp.n_ff_shexp, 32u);
    EXPECT_EQ(hp.n_ctx_train, 512u);
    EXPECT_FLOAT_EQ(hp.rope.freq_scale, 0.25f);
    ASSERT_TRUE(cfg->moe_family);
    const auto& fam = *cfg->moe_family;
    EXPECT_EQ(fam.q_lora_rank, 32u);
    EXPECT_EQ(fam.kv_lora_rank, 16u);
    EXPECT_EQ(fam.qk_nope_head_dim, 16u);
    EXPECT_EQ(fam.qk_rope_head_dim, 8u);
    EXPECT_EQ(fam.v_head_dim, 12u);
    EXPECT_TRUE(fam.sigmoid_scores);
    EXPECT_EQ(fam.n_groups, 4u);
    EXPECT_EQ(fam.groups_used, 2u);
    EXPECT_FLOAT_EQ(fam.routed_scale, 2.5f);
    EXPECT_EQ(fam.n_shared_experts, 1u);
    EXPECT_EQ(fam.leading_dense, 1u);
    EXPECT_EQ(fam.nextn_layers, 1u);
    ASSERT_TRUE(fam.yarn);
    EXPECT_FLOAT_EQ(fam.yarn->factor, 4.0f);
    EXPECT_EQ(fam.yarn->original_context, 128u);
    EXPECT_FLOAT_EQ(fam.yarn->mscale_all_dim, 1.0f);
    EXPECT_TRUE(fam.yarn->truncate);
    EXPECT_EQ(cfg->norm_topk_prob, std::optional<bool>(true));
    EXPECT_FALSE(cfg->fp8_block);
}

TEST(moe_family_config, deepseek_without_q_lora_and_glm_partial_rotary) {
    auto lite = parse(fixture_config("deepseek_v3_lite"));
    ASSERT_TRUE(lite) << lite.error().message;
    EXPECT_EQ(lite->moe_family->q_lora_rank, 0u);
    EXPECT_EQ(lite->moe_family->n_shared_experts, 2u);
    EXPECT_EQ(lite->hp.n_ff_shexp, 64u);
    EXPECT_FALSE(lite->moe_family->yarn);
    EXPECT_FLOAT_EQ(lite->hp.rope.freq_scale, 1.0f);

    auto glm = parse(fixture_config("glm4moe"));
    ASSERT_TRUE(glm) << glm.error().message;
    EXPECT_EQ(glm->hp.arch, "glm4moe");
    EXPECT_EQ(glm->hp.head_dim, 16u);
    EXPECT_EQ(glm->hp.n_head_kv, 2u);
    EXPECT_EQ(glm->hp.rope.n_rot, 8u); // partial_rotary_factor 0.5
    EXPECT_EQ(glm->moe_family->kv_lora_rank, 0u);
    EXPECT_EQ(glm->moe_family->nextn_layers, 1u);
    EXPECT_FLOAT_EQ(glm->moe_family->routed_scale, 2.5f);
    EXPECT_FALSE(glm->moe_family->qk_norm);
    auto qk = parse(fixture_config("glm4moe_qknorm"));
    ASSERT_TRUE(qk) << qk.error().message;
    EXPECT_TRUE(qk->moe_family->qk_norm);
    EXPECT_EQ(qk->moe_family->n_groups, 2u);
    EXPECT_FLOAT_EQ(qk->hp.rope.freq_base, 1e6f);
}

TEST(moe_family_config, transformers_4_spelling_of_deepseek_v3_and_fp8_blocks) {
    // As DeepSeek-V3's own config.json writes it: rope_scaling with "type", rope_theta at the top level, FP8.
    auto cfg = parse_edited("deepseek_v3", [](json::object& c) {
        c.erase("rope_parameters");
        c["rope_theta"] = 10000.0;
        c["rope_scaling"] = json::object{{"type", "yarn"},
                                         {"factor", 40},
                                         {"beta_fast", 32},
                                         {"beta_slow", 1},
                                         {"mscale", 1.0},
                                         {"mscale_all_dim", 1.0},
                                         {"original_max_position_embeddings", 4096}};
        c["quantization_config"] = json::object{{"activation_scheme", "dynamic"},
                                                {"fmt", "e4m3"},
                                                {"quant_method", "fp8"},
                                                {"weight_block_size", json::array{128, 128}}};
    });
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_FLOAT_EQ(cfg->hp.rope.freq_scale, 1.0f / 40.0f);
    EXPECT_EQ(cfg->moe_family->yarn->original_context, 4096u);
    ASSERT_TRUE(cfg->fp8_block);
    EXPECT_EQ((*cfg->fp8_block)[0], 128u);
    EXPECT_EQ((*cfg->fp8_block)[1], 128u);
    auto fp8 = parse(fixture_config("deepseek_v3_fp8"));
    ASSERT_TRUE(fp8) << fp8.error().message;
    EXPECT_EQ((*fp8->fp8_block)[0], 32u);
}

TEST(moe_family_config, kimi_k25_reads_the_text_config_and_prefixes_tensors) {
    auto text = fixture_config("deepseek_v3");
    text["model_type"] = "kimi_k2";
    text.erase("architectures");
    json::object root{{"architectures", json::array{"KimiK25ForConditionalGeneration"}},
                      {"model_type", "kimi_k25"},
                      {"text_config", text},
                      {"vision_config", json::object{{"hidden_size", 32}}}};
    auto cfg = parse(root);
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->hp.arch, "deepseek2");
    EXPECT_EQ(cfg->tensor_prefix, "language_model.");
    EXPECT_EQ(cfg->moe_family->kv_lora_rank, 16u);
    text.erase("kv_lora_rank");
    root["text_config"] = text;
    expect_error_naming(parse(root), "text_config.kv_lora_rank");
    root.erase("text_config");
    expect_error_naming(parse(root), "text_config");
}

TEST(moe_family_config, inconsistent_mla_ranks_and_groups_are_errors_naming_the_field) {
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["kv_lora_rank"] = 0; }), "kv_lora_rank");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["qk_rope_head_dim"] = 7; }),
                        "qk_rope_head_dim");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["qk_head_dim"] = 30; }), "qk_head_dim");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c.erase("v_head_dim"); }), "v_head_dim");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["n_group"] = 3; }), "n_group");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["n_group"] = 8; }), "n_group");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["topk_group"] = 5; }), "topk_group");
    expect_error_naming(parse_edited("deepseek_v3",
                                     [](json::object& c) {
                                         c["topk_group"] = 1;
                                         c["num_experts_per_tok"] = 3;
                                     }),
                        "num_experts_per_tok");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["first_k_dense_replace"] = 9; }),
                        "first_k_dense_replace");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["scoring_func"] = "sqrtsoftplus"; }),
                        "scoring_func");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["topk_method"] = "group_limited_greedy"; }),
                        "topk_method");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["routed_scaling_factor"] = -1; }),
                        "routed_scaling_factor");
    expect_error_naming(parse_edited("deepseek_v3", [](json::object& c) { c["attention_bias"] = true; }),
                        "attention_bias");
    expect_error_naming(
        parse_edited("deepseek_v3",
                     [](json::object& c) { c["rope_parameters"].as_object()["rope_type"] = "longrope"; }),
        "rope_parameters.rope_type");
    expect_error_naming(parse_edited("deepseek_v3",
                                     [](json::object& c) {
                                         c["rope_parameters"].as_object().erase("original_max_position_embeddings");
                                     }),
                        "rope_parameters.original_max_position_embeddings");
    // 16 * 0.35 = 5.6 rotary dimensions: not an even count (transformers 5 writes the factor in both places).
    expect_error_naming(parse_edited("glm4moe",
                                     [](json::object& c) {
                                         c["partial_rotary_factor"] = 0.35;
                                         c["rope_parameters"].as_object()["partial_rotary_factor"] = 0.35;
                                     }),
                        "partial_rotary_factor");
    expect_error_naming(parse_edited("glm4moe", [](json::object& c) { c["n_routed_experts"] = 0; }),
                        "num_experts_per_tok");
}

TEST(moe_family_config, quantization_other_than_fp8_blocks_is_an_error_naming_the_field) {
    expect_error_naming(parse_edited("deepseek_v3",
                                     [](json::object& c) {
                                         c["quantization_config"] = json::object{{"quant_method", "gptq"}};
                                     }),
                        "quantization_config.quant_method");
    expect_error_naming(
        parse_edited("deepseek_v3",
                     [](json::object& c) {
                         c["quantization_config"] = json::object{{"quant_method", "compressed-tensors"}};
                     }),
        "quantization_config.format");
    expect_error_naming(parse_edited("deepseek_v3",
                                     [](json::object& c) {
                                         c["quantization_config"] = json::object{
                                             {"quant_method", "fp8"}, {"weight_block_size", json::array{128}}};
                                     }),
                        "quantization_config.weight_block_size");
    expect_error_naming(parse_edited("deepseek_v3",
                                     [](json::object& c) {
                                         c["quantization_config"] =
                                             json::object{{"quant_method", "fp8"},
                                                          {"fmt", "e5m2"},
                                                          {"weight_block_size", json::array{8, 8}}};
                                     }),
                        "quantization_config.fmt");
}

} // namespace
