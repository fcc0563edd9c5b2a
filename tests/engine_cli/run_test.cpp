// Runs `sluice run` as a process on a tiny random model: streamed text, the --json report, reproducible
// sampling, chat templates, and bad flags or files ending in one message and exit status 1.
#include "tiny_model.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
namespace json = boost::json;
using sluice::test::process_result;
using sluice::test::run_process;
using sluice::test::shell_quote;
using sluice::test::sluice_exe;
using sluice::test::tiny_moe_model;

namespace {

process_result sluice_run(const std::string& flags, const fs::path& model = tiny_moe_model()) {
    return run_process(sluice_exe() + " run --threads 2 -m " + shell_quote(model.string()) + " " + flags);
}

/// Runs with --json and parses stdout; fails the test when the run or the parse does.
json::object run_json(const std::string& flags) {
    const auto r = sluice_run("--json " + flags);
    EXPECT_EQ(r.status, 0) << r.err;
    json::error_code ec;
    auto v = json::parse(r.out, ec);
    EXPECT_FALSE(ec) << ec.message() << "\n" << r.out;
    EXPECT_TRUE(v.is_object()) << r.out;
    return v.is_object() ? v.as_object() : json::object{};
}

std::vector<std::int64_t> int_array(const json::value& v) {
    std::vector<std::int64_t> out;
    for (const auto& x : v.as_array()) {
        out.push_back(x.as_int64());
    }
    return out;
}

} // namespace

TEST(sluice_run, streams_text_to_stdout_and_statistics_to_stderr) {
    const auto r = sluice_run("-p 'Hello there' -n 8 --ignore-eos --seed 3");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(r.out.empty());
    EXPECT_NE(r.err.find("prompt"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("8 tokens"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("length"), std::string::npos) << r.err;
    // Not a terminal: no progress bar.
    EXPECT_EQ(r.err.find("loading ["), std::string::npos) << r.err;
}

TEST(sluice_run, json_report_has_tokens_text_reason_and_timings) {
    const auto o = run_json("-p 'Hello there' -n 6 --ignore-eos --seed 3");
    ASSERT_TRUE(o.contains("prompt_tokens") && o.contains("tokens") && o.contains("text") &&
                o.contains("finish_reason") && o.contains("timings"))
        << json::serialize(o);
    EXPECT_FALSE(o.at("prompt_tokens").as_array().empty());
    EXPECT_EQ(o.at("tokens").as_array().size(), 6u);
    EXPECT_TRUE(o.at("text").is_string());
    EXPECT_EQ(o.at("finish_reason").as_string(), "length");
    const auto& t = o.at("timings").as_object();
    for (const char* key : {"prompt_ms", "prompt_tokens_per_s", "decode_ms", "decode_tokens_per_s"}) {
        ASSERT_TRUE(t.contains(key)) << key;
        EXPECT_GE(t.at(key).to_number<double>(), 0.0) << key;
    }
    EXPECT_GT(t.at("prompt_tokens_per_s").to_number<double>(), 0.0);
    EXPECT_EQ(t.at("per_token_ms").as_array().size(), 6u);
}

TEST(sluice_run, json_output_is_one_line_with_escaped_strings) {
    const auto r = sluice_run("--json -p 'line one\nline \"two\"' -n 16 --ignore-eos --seed 5 --temp 1.5 --top-k 0 "
                              "--top-p 1 --min-p 0");
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_FALSE(r.out.empty());
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
    EXPECT_NO_THROW(json::parse(r.out));
}

TEST(sluice_run, same_seed_gives_the_same_tokens) {
    const std::string flags = "-p 'Once upon a time' -n 12 --ignore-eos --temp 1.0 --top-k 0 --top-p 1 --min-p 0";
    const auto a = run_json(flags + " --seed 42");
    const auto b = run_json(flags + " --seed 42");
    ASSERT_TRUE(a.contains("tokens") && b.contains("tokens"));
    EXPECT_EQ(int_array(a.at("tokens")), int_array(b.at("tokens")));
    EXPECT_EQ(a.at("text"), b.at("text"));
    EXPECT_EQ(a.at("seed").as_int64(), 42);
}

TEST(sluice_run, greedy_text_equals_the_json_text) {
    const auto text = sluice_run("-p 'abc' -n 10 --ignore-eos --temp 0");
    const auto o = run_json("-p 'abc' -n 10 --ignore-eos --temp 0");
    ASSERT_EQ(text.status, 0) << text.err;
    ASSERT_TRUE(o.contains("text"));
    // Text mode ends the stream with a newline.
    EXPECT_EQ(text.out, std::string(o.at("text").as_string()) + "\n");
}

TEST(sluice_run, chat_renders_the_prompt_through_the_template) {
    const auto plain = run_json("-p 'Hi' -n 1 --temp 0");
    const auto chat = run_json("--chat -p 'Hi' -n 1 --temp 0");
    ASSERT_TRUE(plain.contains("prompt_tokens") && chat.contains("prompt_tokens"));
    // ChatML adds <|im_start|>user ... <|im_end|> <|im_start|>assistant around the text.
    EXPECT_GT(chat.at("prompt_tokens").as_array().size(), plain.at("prompt_tokens").as_array().size() + 4);
}

TEST(sluice_run, max_tokens_and_stop_strings_end_the_generation) {
    const auto full = run_json("-p 'x' -n 12 --ignore-eos --temp 0");
    ASSERT_TRUE(full.contains("tokens"));
    EXPECT_EQ(full.at("tokens").as_array().size(), 12u);
    EXPECT_EQ(full.at("finish_reason").as_string(), "length");

    // A stop string taken from the middle of the greedy text (two ASCII letters) cuts it at its first occurrence.
    const std::string text(full.at("text").as_string());
    std::size_t at = text.size() / 2;
    while (at + 1 < text.size() && !(std::isalpha(static_cast<unsigned char>(text[at])) &&
                                     std::isalpha(static_cast<unsigned char>(text[at + 1])))) {
        ++at;
    }
    ASSERT_LT(at + 1, text.size()) << text;
    const std::string stop = text.substr(at, 2);
    const auto stopped = run_json("-p 'x' -n 12 --ignore-eos --temp 0 --stop " + shell_quote(stop));
    ASSERT_TRUE(stopped.contains("text"));
    EXPECT_EQ(stopped.at("finish_reason").as_string(), "stop");
    EXPECT_EQ(std::string(stopped.at("text").as_string()), text.substr(0, text.find(stop)));
}

TEST(sluice_run, bad_sampling_parameters_fail_with_a_message_and_status_1) {
    for (const char* flags : {"--temp nan", "--top-p 2", "--top-p 0", "--min-p -1", "--repeat-penalty 0"}) {
        const auto r = sluice_run(std::string("-p hi ") + flags);
        EXPECT_EQ(r.status, 1) << flags;
        EXPECT_NE(r.err.find("sluice run: "), std::string::npos) << flags << ": " << r.err;
        EXPECT_TRUE(r.out.empty()) << flags;
    }
}

TEST(sluice_run, missing_or_broken_model_files_fail_with_a_message_and_status_1) {
    const auto missing = sluice_run("-p hi", sluice::test::scratch_dir() / "no-such-model.gguf");
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("no-such-model.gguf"), std::string::npos) << missing.err;

    const fs::path junk = sluice::test::scratch_dir() / "junk.gguf";
    std::ofstream(junk) << "not a gguf file"; // the temporary closes the file at the end of the statement
    const auto broken = sluice_run("-p hi", junk);
    EXPECT_EQ(broken.status, 1);
    EXPECT_NE(broken.err.find("sluice run: "), std::string::npos) << broken.err;
}

TEST(sluice_run, chat_without_a_template_fails_with_a_message) {
    // The gpt-2 vocabulary fixture has no chat template; give the tiny model its tokenizer.
    const fs::path model = sluice::test::scratch_dir() / "no-template.gguf";
    const auto made =
        run_process(sluice_exe() + " mkmodel -q -o " + shell_quote(model.string()) +
                    " --preset tiny-qwen3moe --type q8_0 --seed 2 --tokenizer-from " +
                    shell_quote(std::string(SLUICE_SHARED_DIR) + "/fixtures/vocab/ggml-vocab-gpt-2.gguf"));
    ASSERT_EQ(made.status, 0) << made.err;
    const auto r = sluice_run("--chat -p hi -n 1", model);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("chat template"), std::string::npos) << r.err;
}

TEST(sluice_run, missing_required_flags_fail) {
    for (const char* args : {" run", " run -m x.gguf", " run -m /nonexistent/x.gguf -p hi"}) {
        const auto r = run_process(sluice_exe() + args);
        EXPECT_NE(r.status, 0) << args;
        EXPECT_FALSE(r.err.empty()) << args;
    }
}

// With a budget that streams the experts, the report says what the expert cache read; resident, it says nothing.
TEST(sluice_run, a_streaming_run_reports_its_expert_reads) {
    const auto plan = run_process(sluice_exe() + " inspect --plan --memory-budget 1TiB --ctx 256 --threads 2 " +
                                  "--disk-bandwidth 1 " + shell_quote(tiny_moe_model().string()));
    ASSERT_EQ(plan.status, 0) << plan.err;
    const auto p = json::parse(plan.out).as_object();
    const auto bytes = [&](const char* key) { return static_cast<std::uint64_t>(p.at(key).to_number<double>()); };
    const auto budget = bytes("dense_bytes") + bytes("kv_bytes") + bytes("compute_bytes") + 5 * bytes("slot_bytes");
    const auto streamed = sluice_run("-p hi -n 4 --ctx 256 --json --seed 1 --disk-bandwidth 1 --memory-budget " +
                                     std::to_string(budget));
    ASSERT_EQ(streamed.status, 0) << streamed.err;
    const auto v = json::parse(streamed.out).as_object();
    ASSERT_TRUE(v.contains("experts")) << streamed.out;
    EXPECT_GT(v.at("experts").at("bytes_read").to_number<double>(), 0.0);
    EXPECT_EQ(v.at("experts").at("slots").to_number<std::int64_t>(), 5);
    EXPECT_NE(streamed.err.find("experts "), std::string::npos) << streamed.err;
    const auto resident = sluice_run("-p hi -n 4 --ctx 256 --json --seed 1");
    ASSERT_EQ(resident.status, 0) << resident.err;
    EXPECT_FALSE(json::parse(resident.out).as_object().contains("experts"));
    EXPECT_EQ(json::parse(resident.out).at("tokens"), v.at("tokens")); // same output either way
}

TEST(sluice_run, without_a_model_it_runs_the_bundled_one) {
    const auto r = run_process(sluice_exe() + " run --chat -p " + shell_quote("What is 478 + 356?") +
                               " --temp 0 --threads 2 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json::parse(r.out);
    // The trained model's reply (tests/fixtures/trained): a brief think block, then the answer. `run` prints the
    // raw text; the server splits the think block off as reasoning_content.
    EXPECT_EQ(v.at("text").as_string(), "<think>\nI add 478 and 356.\n</think>\n\n834") << r.out;
}

TEST(sluice_run, interrupt_ends_the_generation_with_finish_reason_cancelled) {
    // An endless generation (no token limit, a large context) interrupted after a second by SIGINT.
    const auto r = run_process("timeout -s INT 1 " + sluice_exe() + " run --threads 2 --json -n 0 --ignore-eos " +
                               "--ctx 16384 -p hi -m " + shell_quote(tiny_moe_model().string()));
    EXPECT_EQ(r.status, 124) << r.err; // timeout's status when it had to send the signal
    json::error_code ec;
    const auto v = json::parse(r.out, ec);
    ASSERT_FALSE(ec) << r.out << r.err;
    EXPECT_EQ(v.at("finish_reason").as_string(), "cancelled");
    EXPECT_NE(r.err.find("cancelled"), std::string::npos) << r.err;
}
