// The command line a newcomer meets (issue 22), run as real processes: -m and the common flags on every
// subcommand, numbers refused with their range, the nearest subcommand suggested, the training-context warning,
// plain decimal numbers in JSON, and a progress bar that ends its line and only draws on a terminal.
#include "process.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

using sluice::test::run_process;

namespace {

const std::string sluice_exe = SLUICE_EXE;
const std::string model = std::string(SLUICE_SOURCE_DIR) + "/models/sluice-tiny-moe.gguf";

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

TEST(cli_flags, every_model_subcommand_takes_dash_m) {
    for (const std::string& args :
         {"tokenize -m " + model + " --text hi", "detokenize -m " + model + " --ids 1",
          "template -m " + model + " --messages '[{\"role\":\"user\",\"content\":\"Hi\"}]'", "inspect -m " + model,
          "inspect " + model, "run -m " + model + " -p hi -n 1 --temp 0 -t 1 -c 64",
          "bench -m " + model + " -p 8 -n 2 -r 1 -t 1"}) {
        auto r = run_process(sluice_exe + " " + args);
        EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
    }
}

TEST(cli_flags, numbers_out_of_range_name_the_range) {
    auto r = run_process(sluice_exe + " serve --port 99999");
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(contains(r.err, "--port: Value 99999 not in range 0 to 65535")) << r.err;
    r = run_process(sluice_exe + " run -p hi -t 100000");
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(contains(r.err, "--threads: Value 100000 not in range 0 to 1024")) << r.err;
    r = run_process(sluice_exe + " serve --parallel 0");
    EXPECT_TRUE(contains(r.err, "--parallel: Value 0 not in range 1 to 256")) << r.err;
}

TEST(cli_flags, unknown_subcommand_suggests_the_nearest) {
    auto r = run_process(sluice_exe + " rnu -p hi");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(contains(r.err, "unknown command 'rnu'; did you mean 'run'?")) << r.err;
    r = run_process(sluice_exe + " tokenise -m x");
    EXPECT_TRUE(contains(r.err, "did you mean 'tokenize'?")) << r.err;
    r = run_process(sluice_exe + " frobnicate");
    EXPECT_EQ(r.status, 2);
    EXPECT_FALSE(contains(r.err, "did you mean")) << r.err;
}

TEST(cli_flags, context_longer_than_training_warns) {
    auto r = run_process(sluice_exe + " run -m " + model + " -p hi -n 1 --temp 0 -c 100000");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex("warning: --ctx 100000 is larger than the model's training "
                                                    "context \\([0-9]+\\)")))
        << r.err;
    r = run_process(sluice_exe + " run -m " + model + " -p hi -n 1 --temp 0 -c 64");
    EXPECT_FALSE(contains(r.err, "warning")) << r.err;
}

TEST(cli_flags, json_numbers_are_plain_decimals) {
    auto r = run_process(sluice_exe + " run -m " + model + " -p hi -n 2 --temp 0 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(std::regex_search(r.out, std::regex("[0-9]E[-+]?[0-9]"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\"[a-z_]+_ms\":[0-9]+\\.[0-9]+"))) << r.out;
}

TEST(cli_flags, progress_bar_draws_only_on_a_terminal_and_ends_its_line) {
    // Not a terminal: nothing drawn.
    auto r = run_process(sluice_exe + " run -m " + model + " -p hi -n 1 --temp 0");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(contains(r.err, "loading [")) << r.err;
    // A terminal (script(1) gives the process a pseudo-terminal): the bar reaches 100% and ends its line before
    // anything else is printed.
    r = run_process("script -qec " +
                    sluice::test::shell_quote(sluice_exe + " run -m " + model + " -p hi -n 1 --temp 0") + " /dev/null");
    ASSERT_EQ(r.status, 0) << r.out;
    const auto bar = r.out.rfind("loading [");
    ASSERT_NE(bar, std::string::npos) << r.out;
    const auto line_end = r.out.find('\n', bar);
    ASSERT_NE(line_end, std::string::npos);
    EXPECT_TRUE(contains(r.out.substr(bar, line_end - bar), "100%")) << r.out;
}

} // namespace
