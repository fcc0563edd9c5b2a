// Memory of `sluice run` with a draft model: the process's peak RSS stays within --memory-budget + 5% whether the
// bundled model is resident or streams its experts beside the draft (a warning then says when the draft is what makes
// them stream), and a budget that cannot hold both is refused with a message (or, with --draft-optional, runs without
// the draft and says so).
#include "../cli/process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using sluice::test::process_result;
using sluice::test::run_process;
using sluice::test::shell_quote;
namespace json = boost::json;

const std::string model = std::string(SLUICE_SOURCE_DIR) + "/models/sluice-tiny-moe.gguf";

/// Runs `args` (argv[0] is the executable) with stdout and stderr to /dev/null and returns its exit status and
/// peak resident set in bytes (wait4's ru_maxrss of that child alone).
std::pair<int, std::uint64_t> peak_rss(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const auto& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, static_cast<std::uint64_t>(usage.ru_maxrss) * 1024};
}

/// What `inspect --plan --draft` plans with a 1 TiB budget (everything resident): the draft's bytes and the model's.
std::pair<std::uint64_t, json::object> plan(const std::string& extra = "") {
    const auto r = run_process(std::string(SLUICE_EXE) + " inspect --plan --memory-budget 1TiB --ctx 512 --threads 2 " +
                               "--disk-bandwidth 1 --draft " + shell_quote(model) + " " + extra + shell_quote(model));
    EXPECT_EQ(r.status, 0) << r.err;
    auto o = json::parse(r.out).as_object();
    return {static_cast<std::uint64_t>(o.at("draft_bytes").to_number<double>()), o};
}

/// `sluice run` of 96 greedy tokens of `file` drafting as `drafting` says, within `budget`.
std::vector<std::string> run_args(std::uint64_t budget, const std::string& file = model,
                                  const std::vector<std::string>& drafting = {"--draft", model, "--draft-max", "4"}) {
    std::vector<std::string> args{SLUICE_EXE,
                                  "run",
                                  "-m",
                                  file,
                                  "-p",
                                  "In the beginning God created the heaven and the earth.",
                                  "-n",
                                  "96",
                                  "--temp",
                                  "0",
                                  "--ctx",
                                  "512",
                                  "--threads",
                                  "2",
                                  "--ignore-eos",
                                  "--disk-bandwidth",
                                  "1",
                                  "--memory-budget",
                                  std::to_string(budget)};
    args.insert(args.end(), drafting.begin(), drafting.end());
    return args;
}

TEST(speculative_memory, peak_rss_stays_within_the_budget_with_a_draft_resident_or_streamed) {
    const auto [draft_bytes, whole] = plan();
    ASSERT_GT(draft_bytes, 0u);
    const auto b = [&](const char* key) { return static_cast<std::uint64_t>(whole.at(key).to_number<double>()); };
    // Both resident, with nothing to spare beyond what the plan counts.
    const std::uint64_t resident =
        draft_bytes + b("dense_bytes") + b("expert_bytes") + b("kv_bytes") + b("compute_bytes") + b("checkpoint_bytes");
    // The draft resident and the model's experts streamed through a cache of a quarter of them.
    const std::uint64_t streamed = draft_bytes + b("dense_bytes") + b("kv_bytes") + b("compute_bytes") +
                                   b("checkpoint_bytes") + b("expert_bytes") / 4;
    for (const std::uint64_t budget : {resident, streamed}) {
        const auto [status, rss] = peak_rss(run_args(budget));
        ASSERT_EQ(status, 0) << "budget " << budget;
        EXPECT_LE(rss, budget + budget / 20) << "peak RSS " << rss << " against a budget of " << budget;
    }
    // There the draft's share is what makes the experts stream (the model alone would be resident): a warning says
    // so. With both resident there is none.
    const auto base = std::string(SLUICE_EXE) + " run -m " + shell_quote(model) +
                      " -p hi -n 2 --ctx 512 --threads 2 --disk-bandwidth 1 --draft " + shell_quote(model) +
                      " --memory-budget ";
    const auto warned = run_process(base + std::to_string(streamed));
    EXPECT_EQ(warned.status, 0) << warned.err;
    EXPECT_NE(warned.err.find("make the experts stream"), std::string::npos) << warned.err;
    const auto quiet = run_process(base + std::to_string(resident));
    EXPECT_EQ(quiet.status, 0) << quiet.err;
    EXPECT_EQ(quiet.err.find("make the experts stream"), std::string::npos) << quiet.err;
    // The plan says the streamed budget streams.
    const auto r = run_process(std::string(SLUICE_EXE) + " inspect --plan --ctx 512 --threads 2 --disk-bandwidth 1 " +
                               "--memory-budget " + std::to_string(streamed) + " --draft " + shell_quote(model) + " " +
                               shell_quote(model));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto p = json::parse(r.out).as_object();
    EXPECT_EQ(p.at("strategy"), "stream_experts");
    EXPECT_LE(p.at("planned_bytes").to_number<double>(), static_cast<double>(streamed));
    EXPECT_TRUE(p.contains("draft"));
}

// The same with the model's own MTP block (the trained tiny GLM): its experts, caches and buffers are planned inside
// the budget, and the process stays within it whether the model is resident or streams its experts.
TEST(speculative_memory, peak_rss_stays_within_the_budget_with_the_mtp_block_resident_or_streamed) {
    const std::string glm = std::string(SLUICE_SOURCE_DIR) + "/models/sluice-tiny-glm.gguf";
    const auto r = run_process(std::string(SLUICE_EXE) + " inspect --plan --memory-budget 1TiB --ctx 512 --threads 2 " +
                               "--disk-bandwidth 1 --mtp " + shell_quote(glm));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto whole = json::parse(r.out).as_object();
    const auto b = [&](const char* key) { return static_cast<std::uint64_t>(whole.at(key).to_number<double>()); };
    ASSERT_GT(b("mtp_bytes"), 0u);
    const std::uint64_t fixed = b("mtp_bytes") + b("dense_bytes") + b("kv_bytes") + b("compute_bytes") +
                                b("checkpoint_bytes");
    const std::uint64_t resident = fixed + b("expert_bytes");
    const std::uint64_t streamed = fixed + b("expert_bytes") / 4; // a cache of a quarter of the experts
    for (const std::uint64_t budget : {resident, streamed}) {
        const auto [status, rss] = peak_rss(run_args(budget, glm, {"--mtp"}));
        ASSERT_EQ(status, 0) << "budget " << budget;
        EXPECT_LE(rss, budget + budget / 20) << "peak RSS " << rss << " against a budget of " << budget;
    }
    const auto p = run_process(std::string(SLUICE_EXE) + " inspect --plan --ctx 512 --threads 2 --disk-bandwidth 1 " +
                               "--memory-budget " + std::to_string(streamed) + " --mtp " + shell_quote(glm));
    ASSERT_EQ(p.status, 0) << p.err;
    const auto plan = json::parse(p.out).as_object();
    EXPECT_EQ(plan.at("strategy"), "stream_experts");
    EXPECT_LE(plan.at("planned_bytes").to_number<double>(), static_cast<double>(streamed));
}

TEST(speculative_memory, a_budget_that_cannot_hold_both_is_refused_or_runs_without_the_draft) {
    // The draft is the model itself: a budget of one copy and a MiB holds either alone, not both.
    const auto [draft_bytes, whole] = plan();
    const std::string cmd = std::string(SLUICE_EXE) + " run -m " + shell_quote(model) +
                            " -p hi -n 4 --ctx 512 --threads 2 --disk-bandwidth 1 --draft " + shell_quote(model) +
                            " --memory-budget " + std::to_string(draft_bytes + (1u << 20));
    const auto refused = run_process(cmd);
    EXPECT_EQ(refused.status, 1);
    EXPECT_NE(refused.err.find("cannot hold the draft model"), std::string::npos) << refused.err;
    const auto alone = run_process(cmd + " --draft-optional --json");
    EXPECT_EQ(alone.status, 0) << alone.err;
    EXPECT_NE(alone.err.find("without the draft"), std::string::npos) << alone.err;

    const auto other = std::filesystem::path(SLUICE_BINARY_DIR) / "tests" / "other-vocab-draft.gguf";
    const auto made = run_process(std::string(SLUICE_EXE) + " mkmodel -q -o " + shell_quote(other.string()) +
                                  " --preset tiny-qwen3moe --type q8_0 --seed 3");
    ASSERT_EQ(made.status, 0) << made.err;
    const auto other_vocab = run_process(std::string(SLUICE_EXE) + " run -m " + shell_quote(model) +
                                         " -p hi -n 4 --draft " + shell_quote(other.string()));
    EXPECT_EQ(other_vocab.status, 1);
    EXPECT_NE(other_vocab.err.find("same vocabulary"), std::string::npos) << other_vocab.err;
    std::filesystem::remove(other);
}

} // namespace
