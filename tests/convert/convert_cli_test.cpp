// `sluice convert` as a process: a good checkpoint converts and prints a summary; a broken one exits 1 with a
// message and leaves no output file.
#include "runtime/gguf/model_files.hpp"
#include "tests/cli/process.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace sluice;
using test::shell_quote;

const std::string exe = SLUICE_EXE;

fs::path test_dir(const std::string& name) {
    const auto dir = test::scratch_dir() / "convert_cli" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

TEST(convert_cli, converts_a_checkpoint_and_prints_a_summary) {
    const auto dir = test_dir("good");
    test::write_hf_model(dir / "Tiny-MoE", test::make_hf_model("Qwen3MoeForCausalLM"), 2);
    const auto out = dir / "tiny.gguf";
    const auto r = test::run_process(exe + " convert " + shell_quote((dir / "Tiny-MoE").string()) + " -o " +
                                     shell_quote(out.string()) + " --type q4_k");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("qwen3moe"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tensors"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("were written as q8_0 or f16"), std::string::npos) << r.err; // 64-wide rows
    auto model = gguf::model_files::open(out);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(*model->kv().get_string("general.name"), "Tiny-MoE");
    EXPECT_FALSE(fs::exists(dir / "tiny.gguf.tmp"));
}

TEST(convert_cli, name_option_sets_general_name) {
    const auto dir = test_dir("name");
    test::write_hf_model(dir / "hf", test::make_hf_model("LlamaForCausalLM"));
    const auto out = dir / "named.gguf";
    const auto r = test::run_process(exe + " convert " + shell_quote((dir / "hf").string()) + " -o " +
                                     shell_quote(out.string()) + " --name 'My Model'");
    ASSERT_EQ(r.status, 0) << r.err;
    auto model = gguf::model_files::open(out);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(*model->kv().get_string("general.name"), "My Model");
    EXPECT_EQ(*model->kv().get_u32("general.file_type"), 1u);
}

TEST(convert_cli, broken_checkpoint_exits_1_with_a_message_and_no_output_file) {
    const auto dir = test_dir("broken");
    auto m = test::make_hf_model("Qwen3MoeForCausalLM");
    m.tensors.erase("model.layers.1.mlp.experts.3.down_proj.weight");
    test::write_hf_model(dir / "hf", m);
    const auto out = dir / "out.gguf";
    const auto r =
        test::run_process(exe + " convert " + shell_quote((dir / "hf").string()) + " -o " + shell_quote(out.string()));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("blk.1.ffn_down_exps.weight"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(dir / "out.gguf.tmp"));
}

TEST(convert_cli, unknown_type_exits_1_naming_the_choices) {
    const auto dir = test_dir("type");
    test::write_hf_model(dir / "hf", test::make_hf_model("Qwen2ForCausalLM"));
    const auto r = test::run_process(exe + " convert " + shell_quote((dir / "hf").string()) + " -o " +
                                     shell_quote((dir / "out.gguf").string()) + " --type iq2_xxs");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("q4_k"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("importance matrix"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.gguf"));
}

} // namespace
