// Malformed checkpoints and unsupported configs: each fails with an error naming the problem and leaves no
// output file behind.
#include "runtime/convert/converter.hpp"
#include "runtime/convert/safetensors.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace sluice;

fs::path test_dir(const std::string& name) {
    const auto dir = test::scratch_dir() / "convert_errors" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

/// Writes a good Qwen3-MoE checkpoint, lets `spoil` break it, converts, and returns the error message; checks
/// that neither the output nor its temporary file exists afterwards.
std::string conversion_error(const std::string& name, const std::function<void(test::hf_model&)>& edit_model,
                             const std::function<void(const fs::path&)>& edit_files = {}) {
    auto m = test::make_hf_model("Qwen3MoeForCausalLM");
    edit_model(m);
    const auto dir = test_dir(name);
    test::write_hf_model(dir / "hf", m);
    if (edit_files) {
        edit_files(dir / "hf");
    }
    const auto out = dir / "out.gguf";
    auto r = convert::convert_checkpoint(dir / "hf", out, {.type = convert::output_type::q8_0});
    EXPECT_FALSE(fs::exists(out)) << name;
    EXPECT_FALSE(fs::exists(dir / "out.gguf.tmp")) << name;
    if (r) {
        ADD_FAILURE() << name << ": conversion succeeded";
        return {};
    }
    return r.error().message;
}

TEST(convert_errors, unknown_model_class_is_named) {
    const auto msg = conversion_error(
        "class", [](test::hf_model& m) { m.config["architectures"] = json::array{"GPTBigCodeForCausalLM"}; });
    EXPECT_NE(msg.find("GPTBigCodeForCausalLM"), std::string::npos) << msg;
    EXPECT_NE(msg.find("architectures"), std::string::npos) << msg;
}

TEST(convert_errors, unsupported_config_fields_are_named) {
    const std::pair<std::string, json::value> cases[] = {
        {"rope_scaling", json::object{{"rope_type", "yarn"}, {"factor", 4.0}}},
        {"mlp_only_layers", json::array{0}},
        {"decoder_sparse_step", 2},
        {"use_sliding_window", true},
        {"attention_bias", true},
        {"hidden_act", "gelu"},
        {"num_experts_per_tok", 9},
    };
    for (const auto& [field, value] : cases) {
        const auto msg = conversion_error("field_" + field, [&](test::hf_model& m) { m.config[field] = value; });
        EXPECT_NE(msg.find(field), std::string::npos) << field << ": " << msg;
    }
    const auto missing = conversion_error("field_missing", [](test::hf_model& m) { m.config.erase("hidden_size"); });
    EXPECT_NE(missing.find("hidden_size"), std::string::npos) << missing;
}

TEST(convert_errors, linear_rope_scaling_is_accepted) {
    auto m = test::make_hf_model("LlamaForCausalLM");
    m.config["rope_scaling"] = json::object{{"type", "linear"}, {"factor", 4.0}};
    const auto dir = test_dir("linear_rope");
    test::write_hf_model(dir / "hf", m);
    auto r = convert::convert_checkpoint(dir / "hf", dir / "out.gguf", {});
    EXPECT_TRUE(r) << r.error().message;
}

TEST(convert_errors, missing_tensor_is_named) {
    const auto msg = conversion_error(
        "missing", [](test::hf_model& m) { m.tensors.erase("model.layers.1.self_attn.k_norm.weight"); });
    EXPECT_NE(msg.find("blk.1.attn_k_norm.weight"), std::string::npos) << msg;
    const auto expert = conversion_error(
        "missing_expert", [](test::hf_model& m) { m.tensors.erase("model.layers.0.mlp.experts.2.up_proj.weight"); });
    EXPECT_NE(expert.find("blk.0.ffn_up_exps.weight"), std::string::npos) << expert;
    EXPECT_NE(expert.find("expert 2"), std::string::npos) << expert;
    const auto lm_head =
        conversion_error("missing_output", [](test::hf_model& m) { m.tensors.erase("lm_head.weight"); });
    EXPECT_NE(lm_head.find("output.weight"), std::string::npos) << lm_head;
}

TEST(convert_errors, wrong_shape_is_named_with_both_shapes) {
    const auto msg = conversion_error("shape", [](test::hf_model& m) {
        m.tensors.at("model.layers.0.self_attn.o_proj.weight").shape = {32, 128};
    });
    EXPECT_NE(msg.find("model.layers.0.self_attn.o_proj.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[32, 128]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[64, 64]"), std::string::npos) << msg;
}

TEST(convert_errors, unknown_tensor_is_named) {
    const auto msg = conversion_error("unknown", [](test::hf_model& m) {
        m.tensors["model.layers.0.mlp.mystery.weight"] = {{4}, {1, 2, 3, 4}};
    });
    EXPECT_NE(msg.find("model.layers.0.mlp.mystery.weight"), std::string::npos) << msg;
}

TEST(convert_errors, rotary_inv_freq_buffers_are_ignored) {
    auto m = test::make_hf_model("Qwen3ForCausalLM");
    m.tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = {{8}, std::vector<float>(8, 1.0f)};
    const auto dir = test_dir("inv_freq");
    test::write_hf_model(dir / "hf", m);
    auto r = convert::convert_checkpoint(dir / "hf", dir / "out.gguf", {});
    EXPECT_TRUE(r) << r.error().message;
}

TEST(convert_errors, unsupported_dtype_is_named_with_the_tensor) {
    const auto msg = conversion_error("dtype", [](test::hf_model& m) {
        auto& t = m.tensors.at("model.norm.weight");
        t.dtype = "I64";
        t.raw.assign(t.values.size() * 8, std::byte{0});
    });
    EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("I64"), std::string::npos) << msg;
}

TEST(convert_errors, truncated_safetensors_is_refused) {
    const auto msg = conversion_error(
        "truncated", [](test::hf_model&) {},
        [](const fs::path& dir) {
            const auto p = dir / "model.safetensors";
            fs::resize_file(p, fs::file_size(p) - 100);
        });
    EXPECT_NE(msg.find("past the end"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
}

TEST(convert_errors, header_length_past_the_end_of_file_is_refused) {
    const auto msg = conversion_error(
        "header_len", [](test::hf_model&) {},
        [](const fs::path& dir) {
            std::fstream f(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
            const char huge[8] = {0, 0, 0, 0, 0x10, 0, 0, 0};
            f.write(huge, 8);
        });
    EXPECT_NE(msg.find("header length"), std::string::npos) << msg;
}

TEST(convert_errors, bad_json_is_refused_naming_the_file) {
    const auto header = conversion_error(
        "bad_header_json", [](test::hf_model&) {},
        [](const fs::path& dir) {
            std::fstream f(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(8);
            f.write("{\"x\":", 5);
        });
    EXPECT_NE(header.find("not valid JSON"), std::string::npos) << header;
    const auto config = conversion_error(
        "bad_config_json", [](test::hf_model&) {},
        [](const fs::path& dir) { test::write_text(dir / "config.json", "{\"architectures\": ["); });
    EXPECT_NE(config.find("config.json"), std::string::npos) << config;
    const auto tok = conversion_error(
        "bad_tokenizer_json", [](test::hf_model&) {},
        [](const fs::path& dir) { test::write_text(dir / "tokenizer.json", "[1, 2"); });
    EXPECT_NE(tok.find("tokenizer.json"), std::string::npos) << tok;
}

TEST(convert_errors, tokenizer_larger_than_vocab_size_is_refused) {
    const auto msg = conversion_error("vocab", [](test::hf_model& m) {
        m.config["vocab_size"] = 200;
        m.tensors.at("model.embed_tokens.weight").shape = {200, 64};
        m.tensors.at("model.embed_tokens.weight").values.resize(200 * 64);
        m.tensors.at("lm_head.weight").shape = {200, 64};
        m.tensors.at("lm_head.weight").values.resize(200 * 64);
    });
    EXPECT_NE(msg.find("vocab_size 200"), std::string::npos) << msg;
}

TEST(convert_errors, missing_files_are_named) {
    const auto weights = conversion_error(
        "no_weights", [](test::hf_model&) {}, [](const fs::path& dir) { fs::remove(dir / "model.safetensors"); });
    EXPECT_NE(weights.find("model.safetensors"), std::string::npos) << weights;
    const auto tok = conversion_error(
        "no_tokenizer", [](test::hf_model&) {}, [](const fs::path& dir) { fs::remove(dir / "tokenizer.json"); });
    EXPECT_NE(tok.find("tokenizer.json"), std::string::npos) << tok;
}

TEST(convert_errors, index_naming_a_tensor_absent_from_its_shard_is_refused) {
    auto m = test::make_hf_model("Qwen3ForCausalLM");
    const auto dir = test_dir("index");
    test::write_hf_model(dir / "hf", m, 2);
    std::ifstream in(dir / "hf" / "model.safetensors.index.json");
    auto index = json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
    index["weight_map"].as_object()["model.layers.9.ghost.weight"] = "model-00001-of-00002.safetensors";
    test::write_text(dir / "hf" / "model.safetensors.index.json", json::serialize(index));
    auto r = convert::convert_checkpoint(dir / "hf", dir / "out.gguf", {});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("model.layers.9.ghost.weight"), std::string::npos) << r.error().message;
}

/// Header checks on in-memory JSON: every bad entry is an error, never a crash.
TEST(safetensors_header, bad_entries_are_errors_naming_the_tensor) {
    const std::pair<std::string, std::string> cases[] = {
        {R"({"t":{"dtype":"F32","shape":[2,2],"data_offsets":[0,8]}})", "needs 16"},
        {R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[8,0]}})", "ordered pair"},
        {R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,1000]}})", "past the end"},
        {R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,16]}})", "2^64"},
        {R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]}})", "shape"},
        {R"({"t":{"dtype":"F32","shape":[4]}})", "data_offsets"},
        {R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,18446744073709551615]}})", "past the end"},
        {R"({"t":[1,2]})", "not an object"},
        {R"([1,2])", "not a JSON object"},
        {R"({"t":)", "not valid JSON"},
    };
    for (const auto& [header, want] : cases) {
        auto r = convert::parse_safetensors_header(header, 100, 164);
        ASSERT_FALSE(r) << header;
        EXPECT_NE(r.error().message.find(want), std::string::npos) << header << " -> " << r.error().message;
    }
    auto ok = convert::parse_safetensors_header(
        R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"I8","shape":[],"data_offsets":[12,13]}})",
        100, 113);
    ASSERT_TRUE(ok) << ok.error().message;
    ASSERT_EQ(ok->size(), 2u);
    EXPECT_EQ((*ok)[0].offset, 100u);
    EXPECT_EQ((*ok)[0].rows(), 2u);
    EXPECT_EQ((*ok)[0].row_elems(), 3u);
    EXPECT_EQ((*ok)[1].dtype, convert::st_dtype::other);
}

TEST(safetensors_file, short_files_give_errors_not_crashes) {
    const auto dir = test_dir("short_files");
    for (std::size_t size : {0u, 3u, 8u, 12u}) {
        const auto p = dir / ("f" + std::to_string(size) + ".safetensors");
        std::string bytes = std::string("\x04\0\0\0\0\0\0\0{}  ", 12).substr(0, size);
        test::write_text(p, bytes);
        const fs::path files[] = {p};
        auto c = convert::checkpoint::open_files(files);
        if (size == 12) {
            EXPECT_TRUE(c) << c.error().message; // a valid empty header
        } else {
            EXPECT_FALSE(c) << size;
        }
    }
}

} // namespace
