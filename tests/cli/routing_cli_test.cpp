// Routing recordings through the command line, as real processes: `run --record-routing` writes one that
// `routing-stats` reads and `bench --routing` replays; a garbage or missing recording ends `bench` and
// `routing-stats` with a message naming the file, exit status 1.
#include "process.hpp"
#include "scratch.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

using sluice::test::run_process;
using sluice::test::scratch_dir;
using sluice::test::shell_quote;

namespace {

const std::string sluice_exe = SLUICE_EXE;
const std::string model = std::string(SLUICE_SOURCE_DIR) + "/models/sluice-tiny-moe.gguf";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(routing_cli, run_records_routing_that_stats_read_and_bench_replays) {
    const auto rec = (scratch_dir() / "cli.routing").string();
    auto r = run_process(sluice_exe + " run -m " + model + " -p 'Once upon a time' -n 6 --temp 0 -t 1 -c 64 " +
                         "--record-routing " + shell_quote(rec));
    ASSERT_EQ(r.status, 0) << r.err;
    auto stats = run_process(sluice_exe + " routing-stats " + shell_quote(rec));
    ASSERT_EQ(stats.status, 0) << stats.err;
    EXPECT_TRUE(contains(stats.out, "8 layers x 16 experts, top-4")) << stats.out;
    EXPECT_TRUE(contains(stats.out, "mean")) << stats.out;
    auto json = run_process(sluice_exe + " routing-stats --json " + shell_quote(rec));
    ASSERT_EQ(json.status, 0) << json.err;
    EXPECT_TRUE(contains(json.out, "\"per_layer\"")) << json.out;
    auto bench = run_process(sluice_exe + " bench -m " + model + " -p 8 -n 4 -r 1 -t 1 --json --routing " +
                             shell_quote(rec));
    ASSERT_EQ(bench.status, 0) << bench.err;
    EXPECT_TRUE(contains(bench.out, "\"routing\":\"" + rec + "\"")) << bench.out;
}

TEST(routing_cli, garbage_or_missing_recordings_end_with_a_message) {
    const auto junk = (scratch_dir() / "junk.routing").string();
    std::ofstream(junk) << "this is not a routing recording at all, just text";
    auto bench = run_process(sluice_exe + " bench -m " + model + " -p 8 -n 2 -r 1 -t 1 --routing " + shell_quote(junk));
    EXPECT_EQ(bench.status, 1);
    EXPECT_TRUE(contains(bench.err, junk + ": not a routing recording")) << bench.err;
    auto stats = run_process(sluice_exe + " routing-stats " + shell_quote(junk));
    EXPECT_EQ(stats.status, 1);
    EXPECT_TRUE(contains(stats.err, "not a routing recording")) << stats.err;
    auto missing = run_process(sluice_exe + " routing-stats " + shell_quote(junk + ".absent"));
    EXPECT_EQ(missing.status, 1);
    EXPECT_TRUE(contains(missing.err, "cannot open the routing recording")) << missing.err;
}

} // namespace
