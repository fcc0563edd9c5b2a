// config.json parsing: transformers 4 and 5 spellings of the rope settings, defaults, and field errors.
#include "runtime/convert/hf_config.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>

namespace {

namespace json = boost::json;
using namespace sluice;

std::string config_with(const std::function<void(json::object&)>& edit) {
    auto m = test::make_hf_model("Qwen3MoeForCausalLM");
    edit(m.config);
    return json::serialize(m.config);
}

TEST(hf_config, rope_parameters_of_transformers_5_give_the_rope_base) {
    auto cfg = convert::parse_hf_config(config_with([](json::object& c) {
        c.erase("rope_theta");
        c.erase("rope_scaling");
        c["rope_parameters"] = json::object{{"rope_theta", 1e6}, {"rope_type", "default"}};
    }));
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_FLOAT_EQ(cfg->hp.rope.freq_base, 1e6f);
    EXPECT_FLOAT_EQ(cfg->hp.rope.freq_scale, 1.0f);
}

TEST(hf_config, linear_rope_scaling_sets_the_frequency_scale) {
    auto cfg = convert::parse_hf_config(config_with([](json::object& c) {
        c["rope_scaling"] = json::object{{"type", "linear"}, {"factor", 8.0}};
    }));
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_FLOAT_EQ(cfg->hp.rope.freq_scale, 0.125f);
}

TEST(hf_config, other_rope_types_are_errors_naming_the_field) {
    auto cfg = convert::parse_hf_config(config_with([](json::object& c) {
        c.erase("rope_scaling");
        c["rope_parameters"] = json::object{{"rope_theta", 1e6}, {"rope_type", "longrope"}, {"factor", 4.0}};
    }));
    ASSERT_FALSE(cfg);
    EXPECT_NE(cfg.error().message.find("rope_parameters.type"), std::string::npos) << cfg.error().message;
    EXPECT_NE(cfg.error().message.find("longrope"), std::string::npos) << cfg.error().message;
}

TEST(hf_config, yarn_gives_the_correction_range_inputs_and_attention_factor) {
    auto cfg = convert::parse_hf_config(config_with([](json::object& c) {
        c.erase("rope_scaling");
        c["rope_parameters"] = json::object{{"rope_theta", 1e6},
                                            {"rope_type", "yarn"},
                                            {"factor", 4.0},
                                            {"original_max_position_embeddings", 32768},
                                            {"beta_fast", 16}};
    }));
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_FLOAT_EQ(cfg->hp.rope.freq_scale, 0.25f);
    EXPECT_EQ(cfg->hp.rope.ext_factor, 1.0f);
    EXPECT_EQ(cfg->hp.rope.n_ctx_orig, 32768u);
    EXPECT_EQ(cfg->hp.rope.beta_fast, 16.0f);
    EXPECT_EQ(cfg->hp.rope.beta_slow, 1.0f);
    EXPECT_TRUE(cfg->hp.rope.yarn_truncate);
    EXPECT_FLOAT_EQ(cfg->hp.rope.attn_factor, static_cast<float>(0.1 * std::log(4.0) + 1.0));
    // transformers 4 spelling, original context at the top level, mscale pair, no truncation.
    auto v4 = convert::parse_hf_config(config_with([](json::object& c) {
        c["original_max_position_embeddings"] = 4096;
        c["rope_scaling"] = json::object{
            {"type", "yarn"}, {"factor", 40.0}, {"mscale", 1.0}, {"mscale_all_dim", 0.707}, {"truncate", false}};
    }));
    ASSERT_TRUE(v4) << v4.error().message;
    EXPECT_EQ(v4->hp.rope.n_ctx_orig, 4096u);
    EXPECT_FALSE(v4->hp.rope.yarn_truncate);
    const double m = (0.1 * std::log(40.0) + 1.0) / (0.1 * 0.707 * std::log(40.0) + 1.0);
    EXPECT_FLOAT_EQ(v4->hp.rope.attn_factor, static_cast<float>(m));
}

TEST(hf_config, yarn_fields_are_checked_naming_the_field) {
    const std::pair<json::object, std::string> cases[] = {
        {json::object{{"type", "yarn"}, {"original_max_position_embeddings", 4096}}, "rope_scaling.factor"},
        {json::object{{"type", "yarn"}, {"factor", 4.0}}, "rope_scaling.original_max_position_embeddings"},
        {json::object{{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}, {"beta_fast", -1}},
         "rope_scaling.beta_fast"},
        {json::object{
             {"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}, {"truncate", "no"}},
         "rope_scaling.truncate"},
    };
    for (const auto& [rope, field] : cases) {
        auto cfg = convert::parse_hf_config(config_with([&](json::object& c) { c["rope_scaling"] = rope; }));
        ASSERT_FALSE(cfg) << field;
        EXPECT_NE(cfg.error().message.find(field), std::string::npos) << cfg.error().message;
    }
}

std::string gpt_oss_config(const std::function<void(json::object&)>& edit) {
    std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/tests/fixtures/reference/gpt_oss/config.json");
    auto c = json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
    edit(c);
    return json::serialize(c);
}

TEST(hf_config, gpt_oss_hub_and_transformers_5_configs_give_the_same_model) {
    auto hub = convert::parse_hf_config(gpt_oss_config([](json::object&) {}));
    ASSERT_TRUE(hub) << hub.error().message;
    std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/tests/fixtures/reference/gpt_oss_bf16/config.json");
    auto saved = convert::parse_hf_config(std::string(std::istreambuf_iterator<char>(in), {}));
    ASSERT_TRUE(saved) << saved.error().message;
    for (const auto* cfg : {&*hub, &*saved}) {
        const auto& hp = cfg->hp;
        EXPECT_EQ(hp.arch, "gpt-oss");
        EXPECT_EQ(hp.n_expert, 8u);
        EXPECT_EQ(hp.n_expert_used, 4u);
        EXPECT_EQ(hp.n_ff_exp, 96u);
        EXPECT_EQ(hp.head_dim, 16u);
        EXPECT_EQ(hp.gpt_oss.sliding_window, 12u);
        EXPECT_FLOAT_EQ(hp.rope.freq_base, 150000.0f);
        EXPECT_FLOAT_EQ(hp.rope.freq_scale, 1.0f / 32);
        EXPECT_EQ(hp.rope.n_ctx_orig, 4096u);
        EXPECT_FALSE(hp.rope.yarn_truncate);
        EXPECT_FLOAT_EQ(hp.rope.attn_factor, static_cast<float>(0.1 * std::log(32.0) + 1.0));
        EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
    }
}

TEST(hf_config, gpt_oss_features_outside_the_published_model_are_named) {
    const std::pair<std::function<void(json::object&)>, std::string> cases[] = {
        {[](json::object& c) { c.erase("sliding_window"); }, "sliding_window"},
        {[](json::object& c) { c["sliding_window"] = 0; }, "sliding_window"},
        {[](json::object& c) {
             c["layer_types"] = json::array{"full_attention", "sliding_attention"};
         },
         "layer_types"},
        {[](json::object& c) { c["layer_types"] = json::array{"sliding_attention"}; }, "layer_types"},
        {[](json::object& c) { c["rope_scaling"].as_object()["truncate"] = true; }, "rope_scaling.truncate"},
        {[](json::object& c) { c["swiglu_limit"] = 10.0; }, "swiglu_limit"},
        {[](json::object& c) { c["quantization_config"].as_object()["quant_method"] = "fp8"; },
         "quantization_config.quant_method"},
        {[](json::object& c) {
             c.erase("num_experts_per_tok");
             c.erase("experts_per_token");
         },
         "experts_per_token"},
    };
    for (const auto& [edit, field] : cases) {
        auto cfg = convert::parse_hf_config(gpt_oss_config(edit));
        ASSERT_FALSE(cfg) << field;
        EXPECT_NE(cfg.error().message.find(field), std::string::npos) << cfg.error().message;
    }
}

TEST(hf_config, head_dim_defaults_to_hidden_over_heads) {
    auto cfg = convert::parse_hf_config(config_with([](json::object& c) {
        c.erase("head_dim");
        c["hidden_size"] = 128;
    }));
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->hp.head_dim, 32u);
}

TEST(hf_config, mistyped_fields_are_errors_naming_the_field) {
    auto cfg = convert::parse_hf_config(config_with([](json::object& c) { c["num_hidden_layers"] = "two"; }));
    ASSERT_FALSE(cfg);
    EXPECT_NE(cfg.error().message.find("num_hidden_layers"), std::string::npos) << cfg.error().message;
    auto tied = convert::parse_hf_config(config_with([](json::object& c) { c["tie_word_embeddings"] = 1; }));
    ASSERT_FALSE(tied);
    EXPECT_NE(tied.error().message.find("tie_word_embeddings"), std::string::npos) << tied.error().message;
}

} // namespace
