// The Gated DeltaNet hybrids (qwen35moe, qwen35, qwen3next) beyond the shared reference tests: the files llama.cpp's
// own converter wrote load and compute what Sluice's conversion computes, and the recurrent state carries through
// a prefill, a second chunk and token-by-token decode exactly as transformers' cache does (cached_logits.bin).
#include "runtime/convert/converter.hpp"
#include "runtime/engine/session.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"
#include "tests/fidelity/reference_fixture.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sluice {
namespace {

namespace fs = std::filesystem;

const fs::path reference_dir = test::reference_root();
using test::floats_of;
using test::ids_of;

/// Sluice's conversion of the fixture at `type`, in this process's scratch folder.
fs::path converted(const std::string& name, convert::output_type type, const std::string& type_name) {
    const auto dir = test::scratch_dir() / "hybrid_fidelity" / name;
    const auto out = dir / (type_name + ".gguf");
    if (fs::exists(out)) {
        return out;
    }
    const auto hf = dir / "hf";
    if (!fs::exists(hf)) { // one checkpoint folder serves every type
        fs::create_directories(hf);
        for (const char* f : {"config.json", "model.safetensors"}) {
            fs::create_symlink(reference_dir / name / f, hf / f);
        }
        for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
            fs::create_symlink(reference_dir / "tokenizer" / f, hf / f);
        }
    }
    auto r = convert::convert_checkpoint(hf, out, {.type = type});
    if (!r) {
        throw std::runtime_error(r.error().message);
    }
    return out;
}

/// Logits of every position of `ids`, fed in the pieces `bounds` marks (one session, state carried).
std::vector<float> logits_in_pieces(const std::shared_ptr<model>& m, const std::vector<std::int32_t>& ids,
                                    const std::vector<std::size_t>& bounds) {
    session s(m);
    std::vector<float> all, logits;
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
        const std::span<const std::int32_t> piece(ids.data() + bounds[i], bounds[i + 1] - bounds[i]);
        auto r = test::run_sync<result<void>>([&] { return s.evaluate(piece, logits); });
        if (!r) {
            throw std::runtime_error(r.error().message);
        }
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, top = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
        top = std::max(top, std::fabs(double(b[i])));
    }
    return a.size() == b.size() ? diff / top : 1e9;
}

class hybrid : public ::testing::TestWithParam<const char*> {};

TEST_P(hybrid, llamacpp_converted_file_loads_and_matches_sluice_conversion) {
    const std::string name = GetParam();
    const auto ref = test::reference_json(name);
    const auto ids = ids_of(ref.at("sequences").as_array()[0]);
    const std::vector<std::size_t> whole{0, ids.size()};
    const auto theirs = logits_in_pieces(
        test::load_model(reference_dir / name / "llamacpp-f16.gguf", 64, 256, 2, kernels::quant_type::f32), ids, whole);
    const auto ours = logits_in_pieces(
        test::load_model(converted(name, convert::output_type::f16, "f16"), 64, 256, 2, kernels::quant_type::f32), ids,
        whole);
    // The same weights rounded to F16 by two converters: the logits agree to float rounding.
    EXPECT_LE(max_rel_diff(theirs, ours), 1e-5) << name;
    // And both are transformers' model to F16 rounding (the reference tests' F16 criterion).
    auto want = floats_of(reference_dir / name / "logits.bin");
    want.resize(theirs.size());
    EXPECT_LE(max_rel_diff(theirs, want), 1e-2) << name;
}

TEST_P(hybrid, state_carries_through_prefill_chunk_and_decode_like_transformers_cache) {
    const std::string name = GetParam();
    const auto ref = test::reference_json(name);
    const auto& cached = ref.at("cached").as_object();
    const auto ids = ids_of(ref.at("sequences").as_array()[cached.at("sequence").to_number<std::size_t>()]);
    const auto prefill = cached.at("prefill").to_number<std::size_t>();
    const auto chunk = cached.at("chunk").to_number<std::size_t>();
    std::vector<std::size_t> bounds{0, prefill, prefill + chunk};
    for (std::size_t t = prefill + chunk + 1; t <= ids.size(); ++t) {
        bounds.push_back(t);
    }
    const auto m =
        test::load_model(converted(name, convert::output_type::f32, "f32"), 64, 256, 2, kernels::quant_type::f32);
    const auto ours = logits_in_pieces(m, ids, bounds);
    const auto want = floats_of(reference_dir / name / "cached_logits.bin");
    EXPECT_LE(max_rel_diff(ours, want), 1e-4) << name;
}

INSTANTIATE_TEST_SUITE_P(fixtures, hybrid, ::testing::Values("qwen35moe", "qwen35", "qwen3next"));

} // namespace
} // namespace sluice
