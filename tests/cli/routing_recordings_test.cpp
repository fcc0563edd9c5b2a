// The learned-routing recordings shipped in bench/routing/ (made by tools/routing_donors/), as real processes: each
// decompresses into the build tree, `sluice routing-stats` reads it with the geometry of the model it stands for,
// and its statistics are the ones docs/PERFORMANCE.md prints for it (so the files and the table cannot drift).
#include "process.hpp"
#include "scratch.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <ostream>
#include <string>

namespace json = boost::json;
using sluice::test::run_process;
using sluice::test::scratch_dir;
using sluice::test::shell_quote;

namespace {

const std::string sluice_exe = SLUICE_EXE;
const std::string routing_dir = std::string(SLUICE_SOURCE_DIR) + "/bench/routing";

struct shipped {
    const char* file; ///< under bench/routing/, xz-compressed
    std::uint32_t layers, experts, top_k;
    std::uint64_t tokens;
    // Means over layers, as docs/PERFORMANCE.md prints them (percent, one decimal).
    double top, for_90, reuse, pred, lru[4];
    std::uint32_t version = 1; ///< SLROUTE version: 2 also holds the prediction two layers ahead
    double pred2 = 0;          ///< its recall (version 2), as docs/PERFORMANCE.md prints it
};

// clang-format off
const shipped recordings[] = {
    {"qwen3-30b-a3b.routing.xz", 48, 128, 8, 2048, 2.5, 70.8, 21.7, 91.6, {2.5, 14.8, 30.5, 50.9}},
    {"qwen3.5-35b-a3b.routing.xz", 40, 256, 8, 2048, 1.7, 67.1, 15.8, 89.1, {10.4, 20.6, 36.2, 59.7}},
    {"gpt-oss-120b.routing.xz", 36, 128, 4, 2048, 4.4, 61.7, 16.9, 87.4, {12.5, 23.8, 39.5, 63.7}},
    {"qwen3-30b-a3b-depth2.routing.xz", 48, 128, 8, 2048, 3.0, 68.8, 23.6, 92.2, {2.7, 16.1, 32.9, 53.2}, 2, 88.3},
};
// clang-format on

void PrintTo(const shipped& s, std::ostream* os) { *os << s.file; }

double num(const json::value& v) { return v.to_number<double>(); }

/// Whether `printed` (percent, one decimal) is `share` rounded as the docs print it.
::testing::AssertionResult prints_as(double share, double printed) {
    if (std::abs(100 * share - printed) <= 0.05 + 1e-9) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << 100 * share << "% is not printed as " << printed << "%";
}

class shipped_recording : public ::testing::TestWithParam<shipped> {};

/// The shipped file decompressed into this process's scratch folder.
std::string unpack(const shipped& s) {
    const auto rec = (scratch_dir() / std::string(s.file)).replace_extension("").string();
    const auto r = run_process("xz -dc " + shell_quote(routing_dir + "/" + s.file) + " > " + shell_quote(rec));
    EXPECT_EQ(r.status, 0) << r.err;
    return rec;
}

TEST_P(shipped_recording, decompresses_and_has_the_documented_geometry_and_statistics) {
    const auto& s = GetParam();
    const auto rec = unpack(s);

    const auto r = run_process(sluice_exe + " routing-stats --json " + shell_quote(rec));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto o = json::parse(r.out).as_object();
    EXPECT_EQ(num(o.at("layers")), s.layers);
    EXPECT_EQ(num(o.at("experts")), s.experts);
    EXPECT_EQ(num(o.at("top_k")), s.top_k);
    EXPECT_EQ(num(o.at("tokens")), static_cast<double>(s.tokens));
    EXPECT_NE(o.at("model").as_string().find("routing donor"), std::string::npos) << o.at("model");

    // Every layer routes every token; every layer but the first was predicted by the one before it.
    const auto& layers = o.at("per_layer").as_array();
    ASSERT_EQ(layers.size(), s.layers);
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const auto& row = layers[l].as_object();
        EXPECT_EQ(num(row.at("picks")), static_cast<double>(s.tokens * s.top_k)) << "layer " << l;
        EXPECT_EQ(num(row.at("predicted_tokens")), l > 0 ? static_cast<double>(s.tokens) : 0.0)
            << "layer " << l;
    }

    const auto& mean = o.at("mean").as_object();
    EXPECT_TRUE(prints_as(num(mean.at("top_share")), s.top));
    EXPECT_TRUE(prints_as(num(mean.at("experts_for_90")), s.for_90));
    EXPECT_TRUE(prints_as(num(mean.at("reuse")), s.reuse));
    EXPECT_TRUE(prints_as(num(mean.at("prediction_recall")), s.pred));
    EXPECT_EQ(num(o.at("version")), s.version);
    if (s.version >= 2) {
        // Every layer but the first two was predicted two layers before.
        for (std::size_t l = 0; l < layers.size(); ++l) {
            EXPECT_EQ(num(layers[l].as_object().at("predicted2_tokens")), l > 1 ? static_cast<double>(s.tokens) : 0.0)
                << "layer " << l;
        }
        EXPECT_TRUE(prints_as(num(mean.at("prediction2_recall")), s.pred2));
    }
    const auto& lru = mean.at("lru").as_array();
    ASSERT_EQ(lru.size(), 4u);
    for (std::size_t c = 0; c < 4; ++c) {
        EXPECT_TRUE(prints_as(num(lru[c].at("hit_rate")), s.lru[c])) << "LRU at " << num(lru[c].at("fraction"));
    }

    const auto text = run_process(sluice_exe + " routing-stats " + shell_quote(rec));
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find(std::to_string(s.layers) + " layers x " + std::to_string(s.experts) + " experts, top-" +
                            std::to_string(s.top_k)),
              std::string::npos)
        << text.out;
}

INSTANTIATE_TEST_SUITE_P(bench_routing, shipped_recording, ::testing::ValuesIn(recordings),
                         [](const auto& info) {
                             std::string name = info.param.file;
                             name = name.substr(0, name.find(".routing"));
                             for (auto& c : name) {
                                 c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             }
                             return name;
                         });

} // namespace
