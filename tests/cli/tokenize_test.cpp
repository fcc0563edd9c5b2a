// Runs `sluice tokenize` / `sluice detokenize` as processes against the gpt-2 vocab fixture and its vectors.
#include "process.hpp"
#include "scratch.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using sluice::test::run_process;
using sluice::test::shell_quote;

namespace {

const std::string sluice_exe = SLUICE_EXE;
const fs::path vocab_dir = fs::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab";
const std::string gpt2 = (vocab_dir / "ggml-vocab-gpt-2.gguf").string();

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The fixture's texts and expected ids, paired.
std::vector<std::pair<std::string, std::string>> gpt2_vectors() {
    const std::string inp = read_file(vocab_dir / "ggml-vocab-gpt-2.gguf.inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (std::size_t pos = 0;;) {
        const auto next = inp.find(sep, pos);
        if (next == std::string::npos) {
            break;
        }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::istringstream out(read_file(vocab_dir / "ggml-vocab-gpt-2.gguf.out"));
    std::vector<std::pair<std::string, std::string>> vectors;
    std::string line;
    for (std::size_t i = 0; i < texts.size() && std::getline(out, line); ++i) {
        const auto b = line.find_first_not_of(' ');
        vectors.emplace_back(texts[i], b == std::string::npos ? "" : line.substr(b));
    }
    return vectors;
}

fs::path scratch(const std::string& name) { return sluice::test::scratch_dir() / name; }

} // namespace

TEST(sluice_tokenize, stdin_text_gives_the_reference_ids_and_detokenizes_back) {
    const auto vectors = gpt2_vectors();
    ASSERT_GE(vectors.size(), 30u);
    const fs::path text_file = scratch("tokenize-input.txt");
    for (const auto& [text, expected] : vectors) {
        SCOPED_TRACE(text);
        std::ofstream(text_file, std::ios::binary) << text;
        const auto r = run_process(sluice_exe + " tokenize --model " + shell_quote(gpt2) + " < " +
                                   shell_quote(text_file.string()));
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(r.out, expected + "\n");
        if (expected.empty()) {
            continue;
        }
        const auto back = run_process(sluice_exe + " detokenize --model " + shell_quote(gpt2) + " --ids " +
                                      shell_quote(expected));
        ASSERT_EQ(back.status, 0) << back.err;
        EXPECT_EQ(back.out, text);
    }
}

TEST(sluice_tokenize, json_output_pairs_ids_with_pieces) {
    const auto r = run_process(sluice_exe + " tokenize --json --model " + shell_quote(gpt2) + " --text 'Hello world'");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = boost::json::parse(r.out).as_object();
    ASSERT_EQ(v.at("ids").as_array().size(), 2u);
    ASSERT_EQ(v.at("pieces").as_array().size(), 2u);
    EXPECT_EQ(v.at("pieces").as_array()[0].as_string(), "Hello");
    EXPECT_EQ(v.at("pieces").as_array()[1].as_string(), " world");
}

TEST(sluice_tokenize, bad_models_and_ids_fail_with_a_message) {
    const fs::path not_a_model = scratch("not-a-model.json");
    std::ofstream(not_a_model) << "{ this is not json";
    const std::vector<std::string> commands = {
        " tokenize --model /nonexistent/model.gguf --text hi",
        " tokenize --model " + shell_quote(not_a_model.string()) + " --text hi",
        " detokenize --model " + shell_quote(gpt2) + " --ids '1 2 banana'",
        " detokenize --model " + shell_quote(gpt2) + " --ids '99999999'",
        " detokenize --model " + shell_quote(gpt2) + " --ids '-5'",
        " tokenize --text hi",
    };
    for (const auto& c : commands) {
        SCOPED_TRACE(c);
        const auto r = run_process(sluice_exe + c);
        EXPECT_NE(r.status, 0);
        EXPECT_FALSE(r.err.empty());
    }
}
