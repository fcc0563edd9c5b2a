// Runs `sluice` as a process: --version/--help, `inspect` on every vocab fixture and a generated MoE model,
// and malformed input that must end in a clear message and a non-zero exit.
#include "process.hpp"
#include "scratch.hpp"

#include "runtime/gguf/model_files.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace json = boost::json;
using sluice::test::run_process;
using sluice::test::scratch_dir;
using sluice::test::shell_quote;

namespace {

const std::string sluice_exe = SLUICE_EXE;

fs::path demo_model() {
    static const fs::path path = [] {
        fs::path p = scratch_dir() / "demo.gguf";
        const auto r = run_process(std::string(WRITE_GGUF_EXE) + " " + shell_quote(p.string()));
        EXPECT_EQ(r.status, 0) << r.err;
        return p;
    }();
    return path;
}

json::object inspect_json(const fs::path& file) {
    const auto r = run_process(sluice_exe + " inspect --json " + shell_quote(file.string()));
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out).as_object();
}

std::vector<fs::path> vocab_fixtures() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab")) {
        if (e.path().extension() == ".gguf") {
            files.push_back(e.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

TEST(sluice_cli, version_flag_prints_the_version) {
    const auto r = run_process(sluice_exe + " --version");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("sluice 0."), std::string::npos) << r.out;
}

TEST(sluice_cli, help_lists_the_inspect_subcommand) {
    const auto r = run_process(sluice_exe + " --help");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
}

TEST(sluice_cli, missing_subcommand_and_unknown_flags_fail_with_a_message) {
    for (const char* args : {"", " inspect", " inspect --frobnicate x.gguf", " no-such-command"}) {
        const auto r = run_process(sluice_exe + args);
        EXPECT_NE(r.status, 0) << args;
        EXPECT_FALSE(r.err.empty()) << args;
    }
}

TEST(sluice_inspect, reports_every_vocab_fixture_as_text_and_json) {
    const auto files = vocab_fixtures();
    ASSERT_GE(files.size(), 6u);
    for (const auto& f : files) {
        SCOPED_TRACE(f.string());
        const auto text = run_process(sluice_exe + " inspect " + shell_quote(f.string()));
        ASSERT_EQ(text.status, 0) << text.err;
        EXPECT_NE(text.out.find("tokenizer"), std::string::npos);

        const auto model = sluice::gguf::model_files::open(f);
        ASSERT_TRUE(model) << model.error().message;
        const auto tokens = model->kv().get_array_of_strings("tokenizer.ggml.tokens");
        ASSERT_TRUE(tokens);

        const auto report = inspect_json(f);
        const auto& tok = report.at("tokenizer").as_object();
        EXPECT_EQ(tok.at("tokens").to_number<std::uint64_t>(), tokens->size());
        EXPECT_EQ(tok.at("model").as_string(), *model->kv().get_string("tokenizer.ggml.model"));
        EXPECT_EQ(report.at("tensors").as_array().size(), model->tensors().size());
    }
}

TEST(sluice_inspect, moe_totals_match_the_tensor_table) {
    const auto report = inspect_json(demo_model());
    const auto& hp = report.at("hyperparameters").as_object();
    const auto& totals = report.at("totals").as_object();
    EXPECT_EQ(report.at("architecture").as_string(), "qwen3moe");

    std::uint64_t all = 0;
    std::uint64_t experts = 0;
    std::uint64_t layer0_expert_bytes = 0;
    for (const auto& t : report.at("tensors").as_array()) {
        const auto& o = t.as_object();
        all += o.at("bytes").to_number<std::uint64_t>();
        if (o.at("expert").as_bool()) {
            experts += o.at("bytes").to_number<std::uint64_t>();
            if (o.at("name").as_string().starts_with("blk.0.")) {
                layer0_expert_bytes += o.at("bytes").to_number<std::uint64_t>();
            }
        }
    }
    const auto n_expert = hp.at("expert_count").to_number<std::uint64_t>();
    EXPECT_GT(experts, 0u);
    EXPECT_EQ(totals.at("bytes").to_number<std::uint64_t>(), all);
    EXPECT_EQ(totals.at("expert_bytes").to_number<std::uint64_t>(), experts);
    EXPECT_EQ(totals.at("dense_bytes").to_number<std::uint64_t>(), all - experts);
    EXPECT_EQ(totals.at("experts_per_layer").to_number<std::uint64_t>(), n_expert);
    EXPECT_EQ(totals.at("expert_layers").to_number<std::uint64_t>(), hp.at("block_count").to_number<std::uint64_t>());
    EXPECT_EQ(totals.at("bytes_per_expert").to_number<std::uint64_t>(), layer0_expert_bytes / n_expert);
}

TEST(sluice_inspect, text_report_names_the_dense_and_expert_totals) {
    const auto r = run_process(sluice_exe + " inspect " + shell_quote(demo_model().string()));
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* needle : {"architecture  qwen3moe", "dense", "experts per layer", "blk.0.ffn_up_exps.weight"}) {
        EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
    }
}

TEST(sluice_inspect, malformed_files_end_in_a_message_naming_the_file) {
    const fs::path dir = scratch_dir();
    const fs::path demo = demo_model();
    const auto size = fs::file_size(demo);

    const fs::path truncated = dir / "truncated.gguf";
    fs::copy_file(demo, truncated, fs::copy_options::overwrite_existing);
    fs::resize_file(truncated, size / 2);

    const fs::path text = dir / "not-a-model.gguf";
    std::ofstream(text) << "this is not a GGUF file\n";

    const fs::path empty = dir / "empty.gguf";
    std::ofstream(empty).close();

    for (const fs::path& bad : {truncated, text, empty, dir / "does-not-exist.gguf"}) {
        SCOPED_TRACE(bad.string());
        const auto r = run_process(sluice_exe + " inspect " + shell_quote(bad.string()));
        EXPECT_EQ(r.status, 1);
        EXPECT_NE(r.err.find("sluice inspect: "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(bad.filename().string()), std::string::npos) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
}
