// compressed-tensors "pack-quantized" weights (Kimi-K2-Thinking and K2.5's experts): int4 values packed low bits
// first into I32 words with group scales read back as (q - 8) * scale at any row offset; a Kimi-style
// quantization_config parses; malformed parts are errors naming the tensor or field.
#include "runtime/convert/hf_config.hpp"
#include "runtime/convert/safetensors.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/convert/hf_checkpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace sluice;

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
    std::vector<std::byte> out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

struct packed_weight {
    std::vector<int> q;       ///< [rows][cols] values 0..15
    std::vector<float> scale; ///< [rows][groups]
};

// A [rows, cols] int4 weight in groups of `group` columns, written as X.weight_packed/_scale/_shape.
packed_weight add_packed(test::hf_tensors& t, const std::string& base, std::uint64_t rows, std::uint64_t cols,
                         std::uint64_t group, std::mt19937& rng) {
    packed_weight w;
    const std::uint64_t words = (cols * 4 + 31) / 32, groups = (cols + group - 1) / group;
    std::vector<std::uint32_t> packed(rows * words, 0);
    for (std::uint64_t r = 0; r < rows; ++r) {
        for (std::uint64_t c = 0; c < cols; ++c) {
            const int q = static_cast<int>(rng() % 16);
            w.q.push_back(q);
            packed[r * words + c / 8] |= static_cast<std::uint32_t>(q) << ((c % 8) * 4);
        }
    }
    for (std::uint64_t i = 0; i < rows * groups; ++i) {
        w.scale.push_back(0.01f + static_cast<float>(rng() % 100) / 1000.0f);
    }
    t[base + "weight_packed"] = {{rows, words}, {}, "I32", bytes_of(packed)};
    t[base + "weight_scale"] = {{rows, groups}, w.scale, "F32", {}};
    t[base + "weight_shape"] = {
        {2}, {}, "I64", bytes_of(std::vector<std::int64_t>{std::int64_t(rows), std::int64_t(cols)})};
    return w;
}

TEST(packed_int, int4_groups_read_back_dequantised_at_any_row_offset) {
    std::mt19937 rng(41);
    test::hf_tensors t;
    const auto w = add_packed(t, "model.layers.1.mlp.experts.0.up_proj.", 6, 70, 32, rng);
    t["model.norm.weight"] = {{4}, {1, 2, 3, 4}, "F32", {}};
    const auto dir = test::scratch_dir() / "packed_int";
    fs::create_directories(dir);
    test::write_safetensors(dir / "model.safetensors", t);
    auto ckpt = convert::checkpoint::open(dir);
    ASSERT_TRUE(ckpt) << ckpt.error().message;
    ASSERT_TRUE(ckpt->attach_packed_int(4, 32));
    EXPECT_EQ(ckpt->tensors().size(), 2u); // the norm and the assembled weight; the three parts are gone
    const auto* x = ckpt->find("model.layers.1.mlp.experts.0.up_proj.weight");
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->shape, (std::vector<std::uint64_t>{6, 70}));
    std::vector<float> all(6 * 70);
    ASSERT_TRUE(ckpt->read_rows(*x, 0, 6, all.data()));
    for (std::size_t r = 0; r < 6; ++r) {
        for (std::size_t c = 0; c < 70; ++c) {
            ASSERT_EQ(all[r * 70 + c], static_cast<float>(w.q[r * 70 + c] - 8) * w.scale[r * 3 + c / 32])
                << r << ", " << c;
        }
    }
    std::vector<float> part(3 * 70);
    ASSERT_TRUE(ckpt->read_rows(*x, 2, 3, part.data()));
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 2 * 70));
}

TEST(packed_int, malformed_parts_are_errors_naming_the_tensor) {
    std::mt19937 rng(42);
    const auto dir = test::scratch_dir() / "packed_int_bad";
    auto try_attach = [&](const std::function<void(test::hf_tensors&)>& edit, std::uint32_t bits = 4) {
        test::hf_tensors t;
        add_packed(t, "w.", 4, 40, 16, rng);
        edit(t);
        fs::remove_all(dir);
        fs::create_directories(dir);
        test::write_safetensors(dir / "model.safetensors", t);
        auto ckpt = convert::checkpoint::open(dir);
        EXPECT_TRUE(ckpt);
        return ckpt->attach_packed_int(bits, 16);
    };
    auto zero = try_attach([](test::hf_tensors& t) { t["w.weight_zero_point"] = {{1, 4}, {0, 0, 0, 0}, "F32", {}}; });
    ASSERT_FALSE(zero);
    EXPECT_NE(zero.error().message.find("w.weight_zero_point"), std::string::npos) << zero.error().message;
    auto scale = try_attach([](test::hf_tensors& t) {
        t["w.weight_scale"].shape = {4, 2};
        t["w.weight_scale"].values.resize(8);
    });
    ASSERT_FALSE(scale);
    EXPECT_NE(scale.error().message.find("w.weight_scale"), std::string::npos) << scale.error().message;
    auto missing = try_attach([](test::hf_tensors& t) { t.erase("w.weight_shape"); });
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("w.weight_packed"), std::string::npos) << missing.error().message;
    auto bits = try_attach([](test::hf_tensors&) {}, 3);
    ASSERT_FALSE(bits);
    EXPECT_NE(bits.error().message.find("3 bits"), std::string::npos) << bits.error().message;
}

TEST(packed_int, kimi_style_quantization_config_parses_and_other_schemes_are_refused) {
    auto m = test::make_hf_model("Qwen3MoeForCausalLM");
    json::object weights{{"num_bits", 4}, {"group_size", 32}, {"strategy", "group"}, {"symmetric", true},
                         {"type", "int"}, {"dynamic", false}, {"observer", "minmax"}};
    m.config["quantization_config"] = json::object{
        {"quant_method", "compressed-tensors"},
        {"format", "pack-quantized"},
        {"config_groups",
         json::object{{"group_0", json::object{{"targets", json::array{"Linear"}}, {"weights", weights}}}}}};
    auto cfg = convert::parse_hf_config(json::serialize(m.config));
    ASSERT_TRUE(cfg) << cfg.error().message;
    ASSERT_TRUE(cfg->packed_int);
    EXPECT_EQ((*cfg->packed_int)[0], 4u);
    EXPECT_EQ((*cfg->packed_int)[1], 32u);
    weights["symmetric"] = false;
    m.config["quantization_config"].as_object()["config_groups"].as_object()["group_0"].as_object()["weights"] =
        weights;
    auto asym = convert::parse_hf_config(json::serialize(m.config));
    ASSERT_FALSE(asym);
    EXPECT_NE(asym.error().message.find("quantization_config.config_groups.group_0.weights.symmetric"),
              std::string::npos)
        << asym.error().message;
    m.config["quantization_config"].as_object()["format"] = "nvfp4-pack-quantized";
    auto fmt = convert::parse_hf_config(json::serialize(m.config));
    ASSERT_FALSE(fmt);
    EXPECT_NE(fmt.error().message.find("quantization_config.format"), std::string::npos) << fmt.error().message;
}

} // namespace
