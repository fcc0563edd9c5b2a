// config.json of the Gated DeltaNet hybrids (Qwen3.5 MoE, Qwen3.5, Qwen3-Next) as transformers 4 and 5 write
// them, flat (...ForCausalLM) and nested (...ForConditionalGeneration), and the errors that name a bad field.
#include "runtime/convert/hf_config.hpp"
#include "runtime/convert/text_file.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

namespace {

namespace json = boost::json;
using namespace sluice;

const std::filesystem::path reference_dir =
    std::filesystem::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";

json::object fixture_config(const char* name) {
    auto text = convert::read_text_file(reference_dir / name / "config.json");
    EXPECT_TRUE(text);
    return json::parse(*text).as_object();
}

/// Qwen3.5-35B-A3B's config.json as the hub publishes it: the multimodal class, the language model in text_config.
json::object qwen35_35b_a3b() {
    return json::parse(R"({
      "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
      "image_token_id": 248056, "tie_word_embeddings": false,
      "text_config": {
        "model_type": "qwen3_5_moe_text", "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "hidden_act": "silu",
        "max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "attention_bias": false,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4,
        "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "mtp_num_hidden_layers": 1, "tie_word_embeddings": false,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                            "mrope_section": [11, 11, 10], "mrope_interleaved": true}
      },
      "vision_config": {"depth": 27, "hidden_size": 1152}
    })")
        .as_object();
}

result<convert::hf_model_config> parse(const json::object& o) {
    return convert::parse_hf_config(json::serialize(o));
}

std::vector<bool> pattern(std::initializer_list<int> bits) {
    std::vector<bool> out;
    for (int b : bits) {
        out.push_back(b != 0);
    }
    return out;
}

TEST(hf_config_hybrid, the_fixture_configs_of_transformers_5_17_parse) {
    for (const char* name : {"qwen35moe", "qwen35", "qwen3next"}) {
        auto cfg = parse(fixture_config(name));
        ASSERT_TRUE(cfg) << name << ": " << cfg.error().message;
        EXPECT_EQ(cfg->hp.arch, name);
        ASSERT_TRUE(cfg->hybrid);
        const auto& h = *cfg->hybrid;
        EXPECT_EQ(h.conv_kernel, 4u);
        EXPECT_EQ(h.state_size, 16u);
        EXPECT_EQ(h.group_count, 2u);
        EXPECT_EQ(h.time_step_rank, 4u);
        EXPECT_EQ(h.inner_size, 64u);
        EXPECT_EQ(h.recurrent, pattern({1, 0, 1, 0})) << name;
        EXPECT_EQ(h.full_attention_interval, 2u);
        EXPECT_EQ(h.mtp_layers, 1u);
        EXPECT_EQ(cfg->hp.head_dim, 32u);
        EXPECT_EQ(cfg->hp.rope.n_rot, 8u);
        EXPECT_EQ(cfg->hp.rope.freq_base, 1e7f);
        const std::array<std::uint32_t, 4> sections = std::string(name) == "qwen3next"
                                                          ? std::array<std::uint32_t, 4>{}
                                                          : std::array<std::uint32_t, 4>{2, 1, 1, 0};
        EXPECT_EQ(h.rope_sections, sections) << name;
    }
    auto moe = parse(fixture_config("qwen35moe"));
    EXPECT_EQ(moe->hp.n_expert, 8u);
    EXPECT_EQ(moe->hp.n_ff_exp, 32u);
    EXPECT_EQ(moe->hp.n_ff_shexp, 64u);
    EXPECT_EQ(moe->hp.n_ff, 0u); // the MoE config has no dense size
    auto dense = parse(fixture_config("qwen35"));
    EXPECT_EQ(dense->hp.n_ff, 128u);
    EXPECT_TRUE(dense->tied_embeddings);
}

TEST(hf_config_hybrid, the_published_multimodal_config_reads_its_text_config) {
    auto cfg = parse(qwen35_35b_a3b());
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->hp.arch, "qwen35moe");
    EXPECT_EQ(cfg->hp.n_embd, 2048u);
    EXPECT_EQ(cfg->hp.n_layer, 40u);
    EXPECT_EQ(cfg->hp.n_vocab, 248320u);
    EXPECT_EQ(cfg->hp.n_expert, 256u);
    EXPECT_EQ(cfg->hp.n_expert_used, 8u);
    EXPECT_EQ(cfg->hp.rope.n_rot, 64u);
    const auto& h = *cfg->hybrid;
    EXPECT_EQ(h.full_attention_interval, 4u);
    EXPECT_EQ(std::count(h.recurrent.begin(), h.recurrent.end(), true), 30);
    EXPECT_EQ(h.rope_sections, (std::array<std::uint32_t, 4>{11, 11, 10, 0}));
    EXPECT_EQ(h.inner_size, 4096u);
    EXPECT_FALSE(cfg->tied_embeddings);
}

TEST(hf_config_hybrid, transformers_4_and_5_spellings_give_the_same_config) {
    auto v5 = fixture_config("qwen35moe");
    auto v4 = v5;
    v4.erase("layer_types");
    v4["num_local_experts"] = v4["num_experts"];
    v4.erase("num_experts");
    v4["rope_scaling"] = v4["rope_parameters"];
    v4.erase("rope_parameters");
    v4["rope_scaling"].as_object().erase("partial_rotary_factor");
    auto a = parse(v5), b = parse(v4);
    ASSERT_TRUE(a && b) << (a ? b.error().message : a.error().message);
    EXPECT_EQ(a->hybrid->recurrent, b->hybrid->recurrent);
    EXPECT_EQ(a->hp.n_expert, b->hp.n_expert);
    EXPECT_EQ(a->hp.rope.n_rot, b->hp.rope.n_rot);
    EXPECT_EQ(a->hybrid->rope_sections, b->hybrid->rope_sections);
    // Without any interval or layer_types the pattern is three linear layers, then one full, as in transformers.
    auto bare = v5;
    bare.erase("layer_types");
    bare.erase("full_attention_interval");
    bare["num_hidden_layers"] = 8;
    auto c = parse(bare);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->hybrid->recurrent, pattern({1, 1, 1, 0, 1, 1, 1, 0}));
    EXPECT_EQ(c->hybrid->full_attention_interval, 4u);
}

TEST(hf_config_hybrid, a_qwen3_moe_config_saved_by_transformers_5_reads_num_local_experts) {
    auto o = fixture_config("qwen3moe");
    o["num_local_experts"] = o["num_experts"];
    o.erase("num_experts");
    auto cfg = parse(o);
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->hp.n_expert, 8u);
}

TEST(hf_config_hybrid, an_irregular_layer_pattern_has_no_interval) {
    auto o = fixture_config("qwen3next");
    o.erase("full_attention_interval");
    o["layer_types"] = json::array{"full_attention", "linear_attention", "linear_attention", "full_attention"};
    auto cfg = parse(o);
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->hybrid->recurrent, pattern({0, 1, 1, 0}));
    EXPECT_EQ(cfg->hybrid->full_attention_interval, 0u);
}

TEST(hf_config_hybrid, bad_fields_are_errors_naming_them) {
    const std::pair<std::function<void(json::object&)>, const char*> cases[] = {
        {[](json::object& o) { o["full_attention_interval"] = 4; }, "layer_types"},
        {[](json::object& o) { o["layer_types"].as_array()[1] = "sliding_attention"; }, "layer_types"},
        {[](json::object& o) { o["layer_types"].as_array().pop_back(); }, "layer_types"},
        {[](json::object& o) { o["linear_value_head_dim"] = 32; }, "linear_value_head_dim"},
        {[](json::object& o) { o["linear_num_value_heads"] = 3; }, "linear_num_value_heads"},
        {[](json::object& o) { o.erase("linear_conv_kernel_dim"); }, "linear_conv_kernel_dim"},
        {[](json::object& o) { o["linear_num_key_heads"] = 0; }, "linear_num_key_heads"},
        {[](json::object& o) { o["rope_parameters"].as_object()["mrope_interleaved"] = false; }, "mrope_interleaved"},
        {[](json::object& o) {
             o["rope_parameters"].as_object()["mrope_section"] = json::array{8, 8};
         },
         "mrope_section"},
        {[](json::object& o) { o["rope_parameters"].as_object()["partial_rotary_factor"] = 0.1; },
         "partial_rotary_factor"},
        {[](json::object& o) { o["mtp_num_hidden_layers"] = -1; }, "mtp_num_hidden_layers"},
        {[](json::object& o) { o["text_config"] = 3; }, "text_config"},
    };
    for (const auto& [edit, field] : cases) {
        auto o = fixture_config("qwen35moe");
        edit(o);
        auto cfg = parse(o);
        ASSERT_FALSE(cfg) << field;
        EXPECT_NE(cfg.error().message.find(field), std::string::npos) << cfg.error().message;
    }
}

} // namespace
