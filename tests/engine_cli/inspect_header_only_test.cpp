// `sluice inspect --header-only` as a process, on prefixes of a real generated model (what `curl -r 0-N` leaves):
// the plan of a file cut after its header equals the whole file's, a file cut inside its header says which part is
// missing, the whole-file path on a cut file hints at --header-only, and --probe is refused with --header-only.
#include "tiny_model.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace json = boost::json;
using sluice::test::process_result;
using sluice::test::run_process;
using sluice::test::scratch_dir;
using sluice::test::shell_quote;
using sluice::test::sluice_exe;
using sluice::test::tiny_moe_model;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

process_result inspect(const std::filesystem::path& file, const std::string& flags) {
    return run_process(sluice_exe() + " inspect " + shell_quote(file.string()) + " " + flags);
}

/// Where the tiny model's tensor data starts (the end of its header, padding included).
std::uint64_t data_offset() {
    const auto r = inspect(tiny_moe_model(), "--json");
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out).at("files").at(0).at("data_offset").to_number<std::uint64_t>();
}

/// The first `bytes` bytes of the tiny model, as a partial download would leave them.
std::filesystem::path prefix_of_model(std::uint64_t bytes, const std::string& name) {
    std::ifstream in(tiny_moe_model(), std::ios::binary);
    std::vector<char> head(bytes);
    in.read(head.data(), static_cast<std::streamsize>(bytes));
    EXPECT_EQ(static_cast<std::uint64_t>(in.gcount()), bytes);
    const auto path = scratch_dir() / name;
    std::ofstream(path, std::ios::binary).write(head.data(), static_cast<std::streamsize>(bytes));
    return path;
}

/// A plan that streams (a budget of the fixed part and 6 cache slots) with a given disk speed, so every field
/// of the plan is in play.
std::string plan_flags() {
    const std::string fixed = "--plan --threads 2 --ctx 256 --disk-bandwidth 1.5";
    const auto r = inspect(tiny_moe_model(), fixed + " --memory-budget 8GiB");
    EXPECT_EQ(r.status, 0) << r.err;
    const auto o = json::parse(r.out).as_object();
    const auto bytes = [&](const char* key) { return o.at(key).to_number<std::uint64_t>(); };
    const auto budget = bytes("dense_bytes") + bytes("kv_bytes") + bytes("compute_bytes") + 6 * bytes("slot_bytes");
    return fixed + " --memory-budget " + std::to_string(budget);
}

} // namespace

TEST(sluice_inspect_header_only, the_plan_of_a_file_cut_after_its_header_equals_the_whole_files) {
    const auto flags = plan_flags();
    const auto whole = inspect(tiny_moe_model(), flags);
    ASSERT_EQ(whole.status, 0) << whole.err;
    EXPECT_EQ(json::parse(whole.out).at("strategy").as_string(), "stream_experts") << whole.out;
    const auto end = data_offset();
    for (const std::uint64_t cut : {end, end + 4096}) {
        SCOPED_TRACE(cut);
        const auto part = prefix_of_model(cut, "head-" + std::to_string(cut) + ".gguf");
        const auto planned = inspect(part, "--header-only " + flags);
        ASSERT_EQ(planned.status, 0) << planned.err;
        EXPECT_EQ(json::parse(planned.out), json::parse(whole.out));
    }
    // The whole file read header-only plans the same too.
    const auto full = inspect(tiny_moe_model(), "--header-only " + flags);
    ASSERT_EQ(full.status, 0) << full.err;
    EXPECT_EQ(json::parse(full.out), json::parse(whole.out));
}

TEST(sluice_inspect_header_only, reports_the_metadata_and_tensor_table_of_a_partial_file) {
    const auto part = prefix_of_model(data_offset(), "report.gguf");
    const auto r = inspect(part, "--header-only --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto o = json::parse(r.out);
    const auto whole = json::parse(inspect(tiny_moe_model(), "--json").out);
    EXPECT_EQ(o.at("tensors"), whole.at("tensors"));
    EXPECT_EQ(o.at("totals"), whole.at("totals"));
    EXPECT_EQ(o.at("hyperparameters"), whole.at("hyperparameters"));
}

TEST(sluice_inspect_header_only, a_file_cut_inside_its_header_names_the_missing_part) {
    const auto end = data_offset();
    struct cut_case {
        std::uint64_t bytes;
        const char* part;
    };
    // 10 bytes: inside the preamble; 200: inside the key-values; 40 before the data: inside the tensor table
    // (the padding before the data is under 32 bytes, the last tensor's entry longer than 40).
    for (const auto c : {cut_case{10, "cut in the preamble"}, cut_case{200, "cut in the key-values at entry #"},
                         cut_case{end - 40, "cut in the tensor table at tensor #"}}) {
        SCOPED_TRACE(c.bytes);
        const auto part = prefix_of_model(c.bytes, "cut-" + std::to_string(c.bytes) + ".gguf");
        for (const std::string flags : {"--header-only --plan", "--header-only", "--plan"}) {
            SCOPED_TRACE(flags);
            const auto r = inspect(part, flags);
            EXPECT_EQ(r.status, 1);
            EXPECT_TRUE(r.out.empty()) << r.out;
            EXPECT_TRUE(contains(r.err, "the file ends inside its GGUF header (" + std::to_string(c.bytes) +
                                            " bytes)"))
                << r.err;
            EXPECT_TRUE(contains(r.err, c.part)) << r.err;
            EXPECT_TRUE(contains(r.err, "missing: ")) << r.err;
        }
    }
}

TEST(sluice_inspect_header_only, the_whole_file_path_on_a_cut_file_hints_at_header_only) {
    const auto part = prefix_of_model(data_offset() + 4096, "hint.gguf");
    for (const std::string flags : {"", "--plan", "--json"}) {
        SCOPED_TRACE(flags);
        const auto r = inspect(part, flags);
        EXPECT_EQ(r.status, 1);
        EXPECT_TRUE(contains(r.err, "data extends past end of file")) << r.err;
        EXPECT_TRUE(contains(r.err, "--header-only reads the header alone")) << r.err;
    }
}

TEST(sluice_inspect_header_only, probe_is_refused_with_header_only) {
    const auto r = inspect(tiny_moe_model(), "--header-only --plan --probe");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_TRUE(contains(r.err, "--probe measures the disk by reading the model's expert data")) << r.err;
    EXPECT_TRUE(contains(r.err, "--disk-bandwidth")) << r.err;
}
