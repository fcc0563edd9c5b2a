// The trained model end to end: `sluice serve` answers the 200 held-out questions through the official `openai`
// npm client as accurately as PyTorch did (within 2 points), runs tool loops, reasoning, logprobs and JSON schemas
// through the `openai` and `@anthropic-ai/sdk` clients, and `sluice perplexity` on the held-out prose
// matches PyTorch's perplexity within 1% (F16 export) and 3% (the shipped Q8_0 file). PyTorch's numbers come
// from tools/train/train.py, recorded in tests/fixtures/trained/pytorch_metrics.json. The MTP-bearing
// sluice-tiny-glm (tools/train/train_mtp.py) keeps its answers when its own MTP block drafts.
#include "../cli/process.hpp"
#include "../cli/scratch.hpp"
#include "../server/http_client.hpp"
#include "../server/server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace fs = std::filesystem;

const fs::path source_dir = SLUICE_SOURCE_DIR;
const fs::path trained_dir = source_dir / "tests" / "fixtures" / "trained";
const fs::path shipped_model = source_dir / "models" / "sluice-tiny-moe.gguf";
const fs::path checkpoint = source_dir / "models" / "sluice-tiny-moe";
const fs::path shipped_draft = source_dir / "models" / "sluice-tiny-draft.gguf";
const fs::path shipped_mtp_model = source_dir / "models" / "sluice-tiny-glm.gguf";

boost::json::object read_json(const fs::path& path) {
    std::ifstream in(path);
    return boost::json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
}

const boost::json::object& pytorch() {
    static const auto metrics = read_json(trained_dir / "pytorch_metrics.json");
    return metrics;
}

double number(const boost::json::value& v) {
    return v.to_number<double>();
}

/// Asks `server` every held-out question through the `openai` client, `concurrency` at a time
/// (tests/e2e/heldout_accuracy.mjs prints the accuracy and the answers as one JSON object).
process_result ask_heldout(const server_process& server, int concurrency) {
    return run_process("node " + shell_quote((source_dir / "tests" / "e2e" / "heldout_accuracy.mjs").string()) + " " +
                       shell_quote(std::string(SLUICE_NPM_CACHE) + "/openai-6.30.1") + " " + server.base_url() + " " +
                       shell_quote((trained_dir / "heldout.jsonl").string()) + " " + std::to_string(concurrency));
}

/// A counter or gauge from `server`'s /metrics (NaN when it is missing).
double metric(const server_process& server, const std::string& name) {
    const auto metrics = send_request(server.port(), "GET", "/metrics", "").body;
    const auto at = metrics.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name << " missing from /metrics:\n" << metrics;
    return at == std::string::npos ? std::nan("") : std::stod(metrics.substr(at + name.size() + 2, 32));
}

TEST(trained_model, serve_answers_heldout_questions_as_accurately_as_pytorch) {
    server_process server({"--parallel", "4", "--ctx", "256"}, shipped_model);
    const auto r = ask_heldout(server, 4);
    ASSERT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    const auto ours = boost::json::parse(r.out).as_object();
    const auto& ref = pytorch().at("accuracy_fixture").as_object();
    const double engine = number(ours.at("accuracy"));
    const double torch = number(ref.at("overall"));
    // Which answers differ from PyTorch's greedy answers (for the log; the criterion is the accuracy).
    const auto& mine = ours.at("answers").as_array();
    const auto& theirs = pytorch().at("answers_fixture").as_array();
    ASSERT_EQ(mine.size(), theirs.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < mine.size(); ++i) {
        if (mine[i].as_string() != theirs[i].as_string()) {
            ++differ;
            std::printf("answer %zu differs: engine \"%s\", pytorch \"%s\"\n", i, mine[i].as_string().c_str(),
                        theirs[i].as_string().c_str());
        }
    }
    std::printf("held-out accuracy: engine %.4f, pytorch %.4f; %zu of %zu answers differ; per task %s\n", engine, torch,
                differ, mine.size(), boost::json::serialize(ours.at("per_task")).c_str());
    RecordProperty("engine_accuracy", std::to_string(engine));
    EXPECT_EQ(mine.size(), 200u);
    EXPECT_LE(std::fabs(engine - torch), 0.02);
}

// Tools, reasoning, logprobs and structured output on the trained model through the official `openai` client
// (tool_use.mjs: a calculator / get_capital tool loop, two calls in a turn, streamed calls, reasoning_content and
// enable_thinking false, logprobs, a JSON schema through parse()). Fixed prompts the model answers right; its
// held-out rates are in pytorch_metrics.json's tool_skills. 512 tokens of context: what the model was trained at.
TEST(trained_model, openai_client_runs_tool_loops_reasoning_logprobs_and_json_schema) {
    server_process server({"--parallel", "1", "--ctx", "512"}, shipped_model);
    const auto r = run_process("node " + shell_quote((source_dir / "tests" / "e2e" / "tool_use.mjs").string()) + " " +
                               shell_quote(std::string(SLUICE_NPM_CACHE) + "/openai-6.30.1") + " " + server.base_url());
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_NE(r.out.find("tool use: ok"), std::string::npos) << r.out;
}

// The same model's tool use through the Messages API and the official `@anthropic-ai/sdk` client
// (anthropic_tools.mjs: tool_use / tool_result loops with and without thinking, a streamed call).
TEST(trained_model, anthropic_client_runs_tool_loops_with_and_without_thinking) {
    server_process server({"--parallel", "1", "--ctx", "512"}, shipped_model);
    const auto r =
        run_process("node " + shell_quote((source_dir / "tests" / "e2e" / "anthropic_tools.mjs").string()) + " " +
                    shell_quote(std::string(SLUICE_NPM_CACHE) + "/@anthropic-ai/sdk-0.94.0") + " " + server.base_url());
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_NE(r.out.find("anthropic tools: ok"), std::string::npos) << r.out;
}

// The shipped draft (models/sluice-tiny-draft.gguf) is a dense qwen3 that shares the model's tokenizer and
// template: the same ids for text with control tokens, the same prompt for a tool conversation.
TEST(trained_model, draft_shares_the_tokenizer_and_template) {
    const auto exe = shell_quote(sluice_exe());
    for (const std::string text : {"<|im_start|>user\nWhat is 31 * 58?<|im_end|>\n<|im_start|>assistant\n<think>\n",
                                   "<tool_call>\n{\"name\": \"get_capital\", \"arguments\": {\"country\": \"Nauru\"}}",
                                   "And it came to pass, naïve café 12345"}) {
        const auto a = run_process(exe + " tokenize -m " + shell_quote(shipped_model.string()) + " --json --text " +
                                   shell_quote(text));
        const auto b = run_process(exe + " tokenize -m " + shell_quote(shipped_draft.string()) + " --json --text " +
                                   shell_quote(text));
        ASSERT_EQ(a.status, 0) << a.err;
        ASSERT_EQ(b.status, 0) << b.err;
        EXPECT_EQ(boost::json::parse(a.out).at("ids"), boost::json::parse(b.out).at("ids")) << text;
    }
    const std::string args = " --add-generation-prompt --messages " +
                             shell_quote(R"([{"role":"user","content":"What is 31 * 58?"}])") + " --tools " +
                             shell_quote(R"([{"type":"function","function":{"name":"calculator","parameters":{}}}])");
    const auto a = run_process(exe + " template -m " + shell_quote(shipped_model.string()) + args);
    const auto b = run_process(exe + " template -m " + shell_quote(shipped_draft.string()) + args);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_NE(a.out.find("<tools>"), std::string::npos) << a.out;
    EXPECT_EQ(a.out, b.out);
    const auto info = run_process(exe + " inspect -m " + shell_quote(shipped_draft.string()) + " --json");
    ASSERT_EQ(info.status, 0) << info.err;
    EXPECT_NE(info.out.find("\"qwen3\""), std::string::npos) << info.out;
}

// The draft on its own through `sluice serve` answers the 200 held-out questions as accurately as it did in
// PyTorch (tests/fixtures/trained/draft_metrics.json), within 2 points.
TEST(trained_model, draft_serves_heldout_questions_as_accurately_as_pytorch) {
    server_process server({"--parallel", "4", "--ctx", "256"}, shipped_draft);
    const auto r = ask_heldout(server, 4);
    ASSERT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    const auto ours = boost::json::parse(r.out).as_object();
    const auto draft = read_json(trained_dir / "draft_metrics.json");
    const double engine = number(ours.at("accuracy"));
    const double torch = number(draft.at("accuracy_fixture").at("overall"));
    std::printf("draft held-out accuracy: engine %.4f, pytorch %.4f\n", engine, torch);
    EXPECT_LE(std::fabs(engine - torch), 0.02);
}

/// Asks `server` every held-out question, one at a time; the answers in order.
std::vector<std::string> heldout_answers(const server_process& server) {
    const auto r = ask_heldout(server, 1);
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    std::vector<std::string> out;
    if (r.status == 0) {
        const auto reply = boost::json::parse(r.out); // named: the loop below must not outlive it
        for (const auto& a : reply.at("answers").as_array()) {
            EXPECT_TRUE(a.is_string()) << r.out;
            out.emplace_back(a.is_string() ? std::string(a.as_string()) : boost::json::serialize(a));
        }
    }
    return out;
}

/// A --memory-budget that leaves the expert cache `slots` slots beside everything else `serve <args>` plans.
std::uint64_t budget_for_slots(const std::vector<std::string>& args, std::uint64_t slots) {
    std::string cmd = shell_quote(sluice_exe()) + " inspect " + shell_quote(shipped_model.string()) +
                      " --plan --memory-budget 1TiB --disk-bandwidth 1 --threads 2";
    for (const auto& a : args) {
        cmd += ' ';
        cmd += shell_quote(a);
    }
    const auto r = run_process(cmd);
    EXPECT_EQ(r.status, 0) << r.err;
    const auto plan = boost::json::parse(r.out).as_object();
    const auto bytes = [&](const char* key) { return static_cast<std::uint64_t>(plan.at(key).to_number<double>()); };
    EXPECT_EQ(bytes("total_experts"), 128u); // 8 layers of 16
    return bytes("dense_bytes") + bytes("kv_bytes") + bytes("compute_bytes") + slots * bytes("slot_bytes") +
           bytes("slot_bytes") / 2;
}

// The same 200 questions with the experts streamed from disk through a cache of a quarter of them (32 of 128,
// about 2 MB of the model's 12 MB of experts) give exactly the answers of the fully resident server. One slot
// and one question at a time, so both servers split every prompt the same way between the KV cache it reuses
// from the previous request and the part it prefills (with several slots that split depends on timing, and
// batched prefill equals token-by-token only within 1e-4, not bit for bit).
TEST(trained_model, answers_with_experts_streamed_are_identical_to_resident) {
    const std::vector<std::string> args{"--parallel", "1", "--ctx", "256"};
    std::vector<std::string> resident;
    {
        server_process server(args, shipped_model);
        resident = heldout_answers(server);
    }
    ASSERT_EQ(resident.size(), 200u);
    auto streamed_args = args;
    streamed_args.insert(streamed_args.end(),
                         {"--memory-budget", std::to_string(budget_for_slots(args, 32)), "--disk-bandwidth", "1"});
    server_process server(streamed_args, shipped_model);
    const auto reply = send_request(server.port(), "GET", "/health", "");
    ASSERT_EQ(reply.status, 200) << reply.body << reply.error;
    const auto health = body_json(reply);
    const auto* memory = health.is_object() ? health.as_object().if_contains("memory") : nullptr;
    ASSERT_TRUE(memory && memory->is_object()) << reply.body;
    EXPECT_EQ(boost::json::serialize(memory->at("strategy")), "\"stream_experts\"") << reply.body;
    EXPECT_EQ(memory->at("cache_slots").to_number<std::int64_t>(), 32);
    const auto streamed = heldout_answers(server);
    ASSERT_EQ(streamed.size(), resident.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < streamed.size(); ++i) {
        if (streamed[i] != resident[i]) {
            ++differ;
            ADD_FAILURE() << "question " << i << ": streamed \"" << streamed[i] << "\", resident \"" << resident[i]
                          << "\"";
        }
    }
    EXPECT_EQ(differ, 0u);
    // The disk was really used: the cache's read counter moved.
    EXPECT_GT(metric(server, "sluice_disk_read_bytes_total"), 0.0);
}

// models/sluice-tiny-glm.gguf is a GLM-4.5-style MoE trained together with its multi-token-prediction (NextN)
// block (tools/train/train_mtp.py; PyTorch's numbers in tests/fixtures/trained/mtp_metrics.json). Served plainly
// it answers the held-out questions as accurately as PyTorch (within 2 points). Drafting one token per step with
// its own block gives exactly the same answers, and the block's drafts are accepted about as often as the block
// agreed in PyTorch with the model's next-but-one greedy token. A block computed otherwise than it was trained
// (say the embedding and hidden halves of its input swapped, or the hidden state taken after the output norm)
// would agree with the model about as often as chance.
TEST(trained_model, mtp_model_drafts_with_its_trained_block_and_keeps_the_answers) {
    const std::vector<std::string> args{"--parallel", "1", "--ctx", "256"};
    const auto torch = read_json(trained_dir / "mtp_metrics.json").at("eval").at("thinking").as_object();
    boost::json::value plain;
    {
        server_process server(args, shipped_mtp_model);
        const auto r = ask_heldout(server, 1);
        ASSERT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
        plain = boost::json::parse(r.out);
        EXPECT_EQ(metric(server, "sluice_speculative_drafted_tokens_total"), 0.0);
    }
    const double engine = number(plain.at("accuracy"));
    std::printf("mtp model held-out accuracy: engine %.4f, pytorch %.4f\n", engine, number(torch.at("accuracy")));
    EXPECT_LE(std::fabs(engine - number(torch.at("accuracy"))), 0.02);

    auto mtp_args = args;
    mtp_args.insert(mtp_args.end(), {"--mtp", "--draft-fixed", "--draft-max", "1"});
    server_process server(mtp_args, shipped_mtp_model);
    const auto r = ask_heldout(server, 1);
    ASSERT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_EQ(boost::json::parse(r.out).at("answers"), plain.at("answers"));
    const double drafted = metric(server, "sluice_speculative_drafted_tokens_total");
    const double accepted = metric(server, "sluice_speculative_accepted_tokens_total");
    const double agreement = number(torch.at("mtp_agreement"));
    std::printf("mtp drafts: %.0f drafted, %.0f accepted (%.2f%%); pytorch agreement %.2f%%\n", drafted, accepted,
                100 * accepted / drafted, 100 * agreement);
    EXPECT_GT(drafted, 1000.0); // about ten per answer
    EXPECT_GE(accepted / drafted, agreement - 0.05);
}

/// `sluice perplexity --json` on the held-out prose with PyTorch's window size.
double engine_perplexity(const fs::path& model) {
    const auto ctx = pytorch().at("perplexity").at("ctx").to_number<int>();
    const auto r = run_process(shell_quote(sluice_exe()) + " perplexity -m " + shell_quote(model.string()) + " -f " +
                               shell_quote((trained_dir / "heldout_prose.txt").string()) + " --ctx " +
                               std::to_string(ctx) + " --threads 2 --json");
    EXPECT_EQ(r.status, 0) << r.err;
    const auto out = boost::json::parse(r.out).as_object();
    EXPECT_EQ(out.at("scored").to_number<std::int64_t>(),
              pytorch().at("perplexity").at("fixture_scored").to_number<std::int64_t>());
    return number(out.at("perplexity"));
}

TEST(trained_model, perplexity_of_f16_export_is_within_1_percent_of_pytorch) {
    const auto f16 = scratch_dir() / "sluice-tiny-moe-f16.gguf";
    const auto conv = run_process(shell_quote(sluice_exe()) + " convert " + shell_quote(checkpoint.string()) + " -o " +
                                  shell_quote(f16.string()) + " --type f16");
    ASSERT_EQ(conv.status, 0) << conv.err;
    const double ours = engine_perplexity(f16);
    const double torch = number(pytorch().at("perplexity").at("fixture"));
    std::printf("perplexity f16: engine %.4f, pytorch %.4f (%+.3f%%)\n", ours, torch, 100 * (ours / torch - 1));
    EXPECT_LE(std::fabs(ours / torch - 1), 0.01);
}

TEST(trained_model, perplexity_of_shipped_q8_0_is_within_3_percent_of_pytorch) {
    const double ours = engine_perplexity(shipped_model);
    const double torch = number(pytorch().at("perplexity").at("fixture"));
    std::printf("perplexity q8_0: engine %.4f, pytorch %.4f (%+.3f%%)\n", ours, torch, 100 * (ours / torch - 1));
    EXPECT_LE(std::fabs(ours / torch - 1), 0.03);
}

TEST(perplexity_command, bad_flags_and_files_fail_with_a_message) {
    const auto exe = shell_quote(sluice_exe());
    const auto prose = shell_quote((trained_dir / "heldout_prose.txt").string());
    const auto model = shell_quote(shipped_model.string());
    auto r = run_process(exe + " perplexity -m " + model + " -f /nonexistent/text.txt");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
    r = run_process(exe + " perplexity -m " + model + " -f " + prose + " --ctx 2");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--ctx"), std::string::npos) << r.err;
    const auto tiny = scratch_dir() / "short.txt";
    std::ofstream(tiny) << "Too short for one window.";
    r = run_process(exe + " perplexity -m " + model + " -f " + shell_quote(tiny.string()) + " --ctx 64");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("needs at least 64"), std::string::npos) << r.err;
    r = run_process(exe + " perplexity -m /nonexistent/model.gguf -f " + prose);
    EXPECT_NE(r.status, 0);
    EXPECT_FALSE(r.err.empty());
    r = run_process(exe + " perplexity -f " + prose);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

} // namespace
} // namespace sluice::test
