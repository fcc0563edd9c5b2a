// Runs `sluice mkmodel` as a process: presets listed, a model that `sluice tokenize` and `inspect` accept,
// tokenizers copied from GGUF files and Hugging Face folders, and bad flags that exit 1 leaving no file.
#include "tests/cli/process.hpp"
#include "tests/cli/scratch.hpp"

#include "runtime/gguf/model_files.hpp"
#include "runtime/mkmodel/presets.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using sluice::test::run_process;
using sluice::test::scratch_dir;
using sluice::test::shell_quote;

namespace {

const std::string sluice_exe = SLUICE_EXE;

sluice::test::process_result mkmodel(const fs::path& out, const std::string& flags) {
    return run_process(sluice_exe + " mkmodel -q -o " + shell_quote(out.string()) + " " + flags);
}

} // namespace

TEST(sluice_mkmodel, list_presets_names_every_preset) {
    const auto r = run_process(sluice_exe + " mkmodel --list-presets");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const auto& p : sluice::mkmodel::model_presets()) {
        EXPECT_NE(r.out.find(std::string(p.name)), std::string::npos) << p.name;
    }
}

TEST(sluice_mkmodel, writes_a_model_that_tokenize_and_inspect_accept) {
    const fs::path out = scratch_dir() / "cli-model.gguf";
    auto r = mkmodel(out, "--preset tiny-qwen3moe --layers 3 --experts 16 --experts-used 4 --type q8_0 --seed 5");
    ASSERT_EQ(r.status, 0) << r.err;
    auto model = sluice::gguf::model_files::open(out);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(*model->kv().get_u32("qwen3moe.block_count"), 3u);
    EXPECT_EQ(*model->kv().get_u32("qwen3moe.expert_count"), 16u);
    EXPECT_EQ(*model->kv().get_u32("qwen3moe.expert_used_count"), 4u);
    EXPECT_EQ(model->find_tensor("blk.2.ffn_up_exps.weight")->ne[2], 16u);
    EXPECT_EQ(model->find_tensor("blk.2.ffn_up_exps.weight")->type, sluice::kernels::quant_type::q8_0);

    r = run_process(sluice_exe + " tokenize --model " + shell_quote(out.string()) + " --text 'hello world'");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto d =
        run_process(sluice_exe + " detokenize --model " + shell_quote(out.string()) + " --ids " + shell_quote(r.out));
    ASSERT_EQ(d.status, 0) << d.err;
    EXPECT_EQ(d.out, "hello world");

    r = run_process(sluice_exe + " inspect " + shell_quote(out.string()));
    EXPECT_EQ(r.status, 0) << r.err;
}

TEST(sluice_mkmodel, split_bytes_writes_parts) {
    const fs::path out = scratch_dir() / "cli-split.gguf";
    const auto r = mkmodel(out, "--preset tiny-olmoe --split-bytes 1MiB");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(fs::exists(out));
    fs::path first;
    for (const auto& e : fs::directory_iterator(scratch_dir())) {
        if (e.path().filename().string().starts_with("cli-split-00001-of-")) {
            first = e.path();
        }
    }
    ASSERT_FALSE(first.empty());
    auto model = sluice::gguf::model_files::open(first);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_GE(model->parts().size(), 2u);
}

TEST(sluice_mkmodel, tokenizer_from_a_gguf_file_copies_its_tokenizer) {
    const fs::path fixture = fs::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab" / "ggml-vocab-gpt-2.gguf";
    const fs::path out = scratch_dir() / "cli-gpt2.gguf";
    auto r = mkmodel(out, "--preset tiny-llama --tokenizer-from " + shell_quote(fixture.string()));
    ASSERT_EQ(r.status, 0) << r.err;
    auto model = sluice::gguf::model_files::open(out);
    ASSERT_TRUE(model);
    EXPECT_EQ(*model->kv().get_u32("llama.vocab_size"), 50257u); // raised to the tokenizer's size
    EXPECT_EQ(model->find_tensor("token_embd.weight")->ne[1], 50257u);
    const auto a = run_process(sluice_exe + " tokenize --model " + shell_quote(out.string()) + " --text 'Hello world'");
    const auto b =
        run_process(sluice_exe + " tokenize --model " + shell_quote(fixture.string()) + " --text 'Hello world'");
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);

    r = mkmodel(out, "--preset tiny-llama --vocab 1024 --tokenizer-from " + shell_quote(fixture.string()));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--vocab"), std::string::npos) << r.err;
}

TEST(sluice_mkmodel, tokenizer_from_a_hugging_face_folder_converts_it) {
    const fs::path dir = fs::path(SLUICE_SOURCE_DIR) / ".cache" / "npm" / "qwen3" / "models";
    if (!fs::exists(dir / "tokenizer.json")) {
        GTEST_SKIP() << "run tests/tokenizer/fetch_npm.sh for " << dir;
    }
    const fs::path out = scratch_dir() / "cli-qwen3-tok.gguf";
    auto r = mkmodel(out, "--preset tiny-qwen3 --vocab 151936 --tokenizer-from " + shell_quote(dir.string()));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto a = run_process(sluice_exe + " tokenize --model " + shell_quote(out.string()) + " --text 'Hello world'");
    const auto b = run_process(sluice_exe + " tokenize --model " + shell_quote((dir / "tokenizer.json").string()) +
                               " --text 'Hello world'");
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    auto model = sluice::gguf::model_files::open(out);
    ASSERT_TRUE(model);
    EXPECT_EQ(model->find_tensor("token_embd.weight")->ne[1], 151936u); // padded to --vocab

    // Without --vocab the model grows to the tokenizer; a --vocab below it is an error.
    r = mkmodel(out, "--preset tiny-qwen3 --tokenizer-from " + shell_quote(dir.string()));
    ASSERT_EQ(r.status, 0) << r.err;
    model = sluice::gguf::model_files::open(out);
    ASSERT_TRUE(model);
    EXPECT_EQ(model->find_tensor("token_embd.weight")->ne[1], 151669u);
    r = mkmodel(out, "--preset tiny-qwen3 --vocab 2000 --tokenizer-from " + shell_quote(dir.string()));
    EXPECT_EQ(r.status, 1);
}

TEST(sluice_mkmodel, bad_flags_exit_1_with_a_message_and_leave_no_file) {
    struct bad_case {
        const char* flags;
        const char* message;
    };
    const fs::path out = scratch_dir() / "cli-bad.gguf";
    for (const bad_case& c : {
             bad_case{"--preset no-such-model", "unknown preset"},
             bad_case{"--preset tiny-qwen3moe --experts-used 9", "--experts-used"},
             bad_case{"--preset tiny-qwen3moe --experts 4 --experts-used 6", "--experts-used"},
             bad_case{"--preset tiny-qwen3 --experts 8", "dense"},
             bad_case{"--preset tiny-qwen3 --type q8_1", "--type"},
             bad_case{"--preset tiny-qwen3 --type nonsense", "--type"},
             bad_case{"--preset tiny-qwen3 --embd 320 --type q4_k", "block size"},
             bad_case{"--preset qwen2-moe-a2.7b --type q4_k", "ffn_down_exps"},
             bad_case{"--preset tiny-qwen3 --layers 0", "block_count"},
             bad_case{"--preset tiny-qwen3 --vocab 100", "at least 259"},
             bad_case{"--preset tiny-qwen3 --tokenizer-from /no/such/file.gguf", "--tokenizer-from"},
             bad_case{"", "--preset"},
         }) {
        SCOPED_TRACE(c.flags);
        const auto r = mkmodel(out, c.flags);
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out));
        EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
    }
    const auto r = mkmodel(scratch_dir() / "no-such-dir" / "x.gguf", "--preset tiny-qwen3");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("no-such-dir"), std::string::npos) << r.err;
}
