// Malformed Gated DeltaNet files (qwen35moe, qwen35, qwen3next): missing or inconsistent keys of the layer pattern,
// head counts and state sizes are refused when the model loads, with a message naming the key (or the tensor the
// pattern no longer matches); nothing crashes.
#include "runtime/engine/model.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/writer.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>

namespace sluice {
namespace {

namespace fs = std::filesystem;

/// A copy of `src` with its metadata changed by `edit` (the tensors as they were).
fs::path edited_copy(const fs::path& src, const std::string& tag, const std::function<void(gguf::metadata&)>& edit) {
    const auto out = fs::path(src).replace_extension("." + tag + ".gguf");
    auto files = gguf::model_files::open(src);
    if (!files) {
        throw std::runtime_error(files.error().message);
    }
    gguf::writer w(out);
    w.kv() = files->kv();
    edit(w.kv());
    for (const auto& t : files->tensors()) {
        if (!w.add_tensor(t.name, t.type, t.shape())) {
            throw std::runtime_error("add_tensor " + t.name);
        }
    }
    std::ifstream in(src, std::ios::binary);
    for (const auto& t : files->tensors()) {
        std::vector<std::byte> raw(t.bytes);
        in.seekg(static_cast<std::streamoff>(t.offset));
        in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
        if (!w.write_tensor(raw)) {
            throw std::runtime_error("write_tensor " + t.name);
        }
    }
    if (auto r = w.finish(); !r) {
        throw std::runtime_error(r.error().message);
    }
    return out;
}

/// The error model::load gives for `path` (empty when it loads).
std::string load_error(const fs::path& path) {
    model_options o;
    o.n_ctx = 64;
    o.n_threads = 1;
    auto m = test::run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    return m ? std::string() : m.error().message;
}

struct bad_case {
    std::string arch;
    std::string tag;
    std::function<void(gguf::metadata&)> edit;
    std::string names; ///< what the message must contain
};

class hybrid_bad_input : public ::testing::TestWithParam<bad_case> {};

TEST_P(hybrid_bad_input, is_refused_at_load_naming_the_key) {
    const auto& c = GetParam();
    const auto good = test::tiny_model(c.arch, kernels::quant_type::q8_0);
    ASSERT_EQ(load_error(good), "") << "the unedited file loads";
    const auto message = load_error(edited_copy(good, c.tag, c.edit));
    EXPECT_NE(message.find(c.names), std::string::npos) << message;
}

void erase(gguf::metadata& kv, const std::string& key) {
    ASSERT_TRUE(kv.erase(key)) << key;
}

std::vector<bad_case> cases() {
    std::vector<bad_case> out;
    for (const std::string arch : {"qwen35moe", "qwen35", "qwen3next"}) {
        const auto k = [arch](const char* suffix) { return arch + "." + suffix; };
        for (const char* key :
             {"ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size"}) {
            out.push_back({arch, std::string("no_") + key, [=](auto& kv) { erase(kv, k(key)); }, k(key) + ": missing"});
            out.push_back({arch, std::string("zero_") + key, [=](auto& kv) { kv.set_u32(k(key), 0); },
                           k(key) + ": must be positive"});
        }
        // Value heads that are no multiple of the key heads; an inner size that is not heads x state size.
        out.push_back({arch, "odd_value_heads", [=](auto& kv) { kv.set_u32(k("ssm.time_step_rank"), 3); },
                       k("ssm.time_step_rank")});
        out.push_back(
            {arch, "inner_size", [=](auto& kv) { kv.set_u32(k("ssm.inner_size"), 100); }, k("ssm.inner_size")});
        out.push_back({arch, "state_size_of_the_tensors",
                       [=](auto& kv) {
                           kv.set_u32(k("ssm.state_size"), 32);
                           kv.set_u32(k("ssm.inner_size"), 4 * 32);
                       },
                       "tensor blk.0."});
        // The pattern: a mistyped interval, zero, one that no longer matches the tensors, a short per-layer array.
        out.push_back({arch, "interval_string", [=](auto& kv) { kv.set_string(k("full_attention_interval"), "4"); },
                       k("full_attention_interval")});
        out.push_back({arch, "interval_zero", [=](auto& kv) { kv.set_u32(k("full_attention_interval"), 0); },
                       k("full_attention_interval") + ": must be positive"});
        out.push_back(
            {arch, "interval_off", [=](auto& kv) { kv.set_u32(k("full_attention_interval"), 2); }, "tensor blk.1."});
        out.push_back({arch, "short_pattern",
                       [=](auto& kv) {
                           kv.set_array(k("attention.recurrent_layers"), std::vector<bool>{true, false});
                       },
                       k("attention.recurrent_layers")});
        out.push_back({arch, "nextn_all", [=](auto& kv) { kv.set_u32(k("nextn_predict_layers"), 99); },
                       k("nextn_predict_layers")});
        if (arch != "qwen3next") {
            out.push_back({arch, "no_sections", [=](auto& kv) { erase(kv, k("rope.dimension_sections")); },
                           k("rope.dimension_sections") + ": missing"});
            out.push_back({arch, "wide_sections",
                           [=](auto& kv) {
                               kv.set_array(k("rope.dimension_sections"), std::vector<std::int32_t>{64, 64, 64});
                           },
                           k("rope.dimension_sections")});
        }
        if (arch != "qwen35") {
            out.push_back({arch, "no_shared_expert",
                           [=](auto& kv) { erase(kv, k("expert_shared_feed_forward_length")); },
                           k("expert_shared_feed_forward_length")});
        }
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(keys, hybrid_bad_input, ::testing::ValuesIn(cases()), [](const auto& info) {
    auto name = info.param.arch + "_" + info.param.tag;
    std::replace(name.begin(), name.end(), '.', '_');
    return name;
});

} // namespace
} // namespace sluice
