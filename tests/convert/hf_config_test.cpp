// config.json parsing: transformers 4 and 5 spellings of the rope settings, defaults, and field errors.
#include "runtime/convert/hf_config.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <gtest/gtest.h>

#include <functional>

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
        c["rope_parameters"] = json::object{{"rope_theta", 1e6}, {"rope_type", "yarn"}, {"factor", 4.0}};
    }));
    ASSERT_FALSE(cfg);
    EXPECT_NE(cfg.error().message.find("rope_parameters.type"), std::string::npos) << cfg.error().message;
    EXPECT_NE(cfg.error().message.find("yarn"), std::string::npos) << cfg.error().message;
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
