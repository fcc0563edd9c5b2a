// The generator library on real files: every tiny preset loads with the model loader's own checks, output is
// deterministic, values have the intended spread, split output reopens, and the tokenizer keys work.
#include "model_check.hpp"

#include "runtime/models/weights.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

namespace fs = std::filesystem;
using sluice::kernels::quant_type;
using namespace sluice;
using test::preset_plan;
using test::write_plan;

namespace {

std::vector<std::string> tiny_presets() {
    std::vector<std::string> out;
    for (const auto& p : mkmodel::model_presets()) {
        if (p.name.starts_with("tiny-")) {
            out.emplace_back(p.name);
        }
    }
    return out;
}

/// Opens `path`, runs models::load_hparams and checks the tensor table equals the architecture's, with
/// `type` for every quantizable tensor and F32 for norms, biases and routers.
void expect_loadable(const fs::path& path, quant_type type, bool tied) {
    auto model = gguf::model_files::open(path);
    ASSERT_TRUE(model) << model.error().message;
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(model->kv(), arch);
    ASSERT_TRUE(hp) << hp.error().message;
    auto expected = arch->tensors(*hp);
    // Optional tensors are left out, the untied output head aside (the MTP block's own embedding and head too).
    std::erase_if(expected,
                  [&](const models::tensor_spec& t) { return t.optional && (tied || t.name != "output.weight"); });
    ASSERT_EQ(model->tensors().size(), expected.size()) << path;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& t = model->tensors()[i];
        const auto& e = expected[i];
        EXPECT_EQ(t.name, e.name);
        EXPECT_TRUE(std::ranges::equal(t.shape(), e.ne)) << t.name;
        const bool is_float = e.role == models::tensor_role::vector || e.role == models::tensor_role::router;
        EXPECT_EQ(t.type, is_float ? quant_type::f32 : type) << t.name;
    }
}

} // namespace

TEST(random_model, every_tiny_preset_covers_every_architecture) {
    for (const auto* arch : models::supported_architectures()) {
        const auto names = tiny_presets();
        EXPECT_TRUE(std::ranges::any_of(names, [&](const std::string& n) {
            return mkmodel::find_preset(n)->hparams.arch == arch->name;
        })) << arch->name;
    }
}

TEST(random_model, every_tiny_preset_writes_a_file_the_model_loader_accepts) {
    for (const auto& name : tiny_presets()) {
        SCOPED_TRACE(name);
        const auto plan = preset_plan(name);
        const auto path = write_plan(plan, name + ".gguf");
        expect_loadable(path, mkmodel::find_preset(name)->default_type, false);
        EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
    }
}

TEST(random_model, every_weight_type_writes_a_loadable_file) {
    for (const auto type : {quant_type::q4_k, quant_type::q5_k, quant_type::q6_k, quant_type::q8_0, quant_type::q4_0,
                            quant_type::f16, quant_type::bf16, quant_type::f32, quant_type::q2_k, quant_type::q3_k,
                            quant_type::mxfp4, quant_type::iq2_xxs, quant_type::iq1_m, quant_type::iq3_s,
                            quant_type::tq1_0}) {
        SCOPED_TRACE(kernels::traits_of(type).name);
        const auto path = write_plan(preset_plan("tiny-qwen2moe", type), "types.gguf");
        expect_loadable(path, type, false);
    }
}

TEST(random_model, tied_models_leave_out_the_output_projection) {
    auto plan = preset_plan("tiny-qwen3");
    const auto* p = mkmodel::find_preset("tiny-qwen3");
    auto tied = mkmodel::plan_random_model({.hparams = p->hparams, .type = quant_type::q8_0, .tied = true});
    ASSERT_TRUE(tied);
    EXPECT_EQ(tied->tensors.size() + 1, plan.tensors.size());
    EXPECT_TRUE(std::ranges::none_of(tied->tensors, [](const auto& t) { return t.spec.name == "output.weight"; }));
}

TEST(random_model, same_seed_gives_identical_bytes_and_another_seed_differs) {
    const auto a = test::read_bytes(write_plan(preset_plan("tiny-qwen3moe", quant_type::q4_k, 1), "seed-a.gguf"));
    const auto b = test::read_bytes(write_plan(preset_plan("tiny-qwen3moe", quant_type::q4_k, 1), "seed-b.gguf"));
    const auto c = test::read_bytes(write_plan(preset_plan("tiny-qwen3moe", quant_type::q4_k, 2), "seed-c.gguf"));
    ASSERT_GT(a.size(), 1000000u);
    EXPECT_TRUE(a == b);
    ASSERT_EQ(a.size(), c.size());
    // Same header layout, different data: count differing bytes in the second half of the file.
    std::size_t differ = 0;
    for (std::size_t i = a.size() / 2; i < a.size(); ++i) {
        differ += a[i] != c[i];
    }
    EXPECT_GT(differ, a.size() / 4);
}

TEST(random_model, values_are_finite_with_the_intended_spread) {
    for (const auto type : {quant_type::q4_k, quant_type::q8_0, quant_type::f16}) {
        SCOPED_TRACE(kernels::traits_of(type).name);
        const auto plan = preset_plan("tiny-qwen2moe", type);
        auto model = gguf::model_files::open(write_plan(plan, "values.gguf"));
        ASSERT_TRUE(model) << model.error().message;
        struct expectation {
            const char* tensor;
            double mean;
            double stddev;
        };
        const double unit = 1.0 / std::sqrt(256.0);    // tiny rows are 256 wide...
        const double ff_unit = 1.0 / std::sqrt(256.0); // ...and so are the experts' down rows
        for (const expectation& e : {
                 expectation{"token_embd.weight", 0.0, 1.0},
                 expectation{"output.weight", 0.0, unit},
                 expectation{"blk.0.attn_q.weight", 0.0, unit},
                 expectation{"blk.1.ffn_up_exps.weight", 0.0, unit},
                 expectation{"blk.1.ffn_down_exps.weight", 0.0, ff_unit},
                 expectation{"blk.0.ffn_down_shexp.weight", 0.0, 1.0 / std::sqrt(512.0)},
                 expectation{"blk.0.ffn_gate_inp.weight", 0.0, 2.0 * unit},
                 expectation{"blk.0.attn_norm.weight", 1.0, 0.02},
                 expectation{"blk.0.attn_q.bias", 0.0, 0.02},
             }) {
            SCOPED_TRACE(e.tensor);
            const auto m = test::moments_of(test::tensor_values(*model, e.tensor));
            EXPECT_TRUE(m.finite);
            EXPECT_NEAR(m.mean, e.mean, 0.1 * e.stddev + 1e-3);
            EXPECT_NEAR(m.stddev, e.stddev, 0.1 * e.stddev);
        }
    }
}

TEST(random_model, split_output_reopens_as_the_same_model) {
    const auto plan = preset_plan("tiny-mixtral", quant_type::q8_0);
    const auto whole = gguf::model_files::open(write_plan(plan, "whole.gguf"));
    ASSERT_TRUE(whole);
    auto written = mkmodel::write_random_model(plan, test::scratch_dir() / "split.gguf", {.split_bytes = 1 << 20});
    ASSERT_TRUE(written) << written.error().message;
    ASSERT_GT(written->size(), 2u);
    for (const auto& p : *written) {
        EXPECT_TRUE(fs::exists(p));
        EXPECT_NE(p.string().find("split-0000"), std::string::npos) << p;
    }
    auto split = gguf::model_files::open(written->front());
    ASSERT_TRUE(split) << split.error().message;
    ASSERT_EQ(split->tensors().size(), whole->tensors().size());
    for (const auto& t : whole->tensors()) {
        EXPECT_EQ(test::tensor_values(*split, t.name), test::tensor_values(*whole, t.name)) << t.name;
    }
    for (const auto& entry : fs::directory_iterator(test::scratch_dir())) {
        EXPECT_FALSE(entry.path().string().find(".tmp") != std::string::npos) << entry.path();
    }
}

TEST(random_model, rows_that_do_not_fit_the_block_size_are_refused) {
    const auto* p = mkmodel::find_preset("qwen2-moe-a2.7b"); // expert rows of 1408 values
    auto plan = mkmodel::plan_random_model({.hparams = p->hparams, .type = quant_type::q4_k});
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.error().message.find("ffn_down_exps"), std::string::npos) << plan.error().message;
    EXPECT_NE(plan.error().message.find("1408"), std::string::npos) << plan.error().message;
}

TEST(random_model, invalid_shapes_are_refused_naming_the_key) {
    auto hp = mkmodel::find_preset("tiny-qwen3moe")->hparams;
    hp.n_expert_used = hp.n_expert + 1;
    auto plan = mkmodel::plan_random_model({.hparams = hp});
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.error().message.find("expert_used_count"), std::string::npos) << plan.error().message;
}

TEST(random_model, every_preset_plans_with_its_default_type) {
    for (const auto& p : mkmodel::model_presets()) {
        auto plan = mkmodel::plan_random_model({.hparams = p.hparams, .type = p.default_type, .tied = p.tied});
        EXPECT_TRUE(plan) << p.name << ": " << (plan ? "" : plan.error().message);
    }
    const auto* big = mkmodel::find_preset("qwen3-30b-a3b");
    auto plan = mkmodel::plan_random_model({.hparams = big->hparams, .type = quant_type::q4_k});
    ASSERT_TRUE(plan);
    EXPECT_GT(plan->data_bytes(), std::uint64_t{16} << 30); // about 17 GB, like the real Q4_K file
}

// gpt-oss ships its experts in MXFP4 and everything else wider; the presets do the same, at the published sizes
// (the hub's gpt-oss-20b file is 12.1 GB, 11.3 GiB; 120b 63 GB, 58.5 GiB).
TEST(random_model, gpt_oss_presets_keep_mxfp4_experts_at_the_published_sizes) {
    for (const auto& [name, min_gib, max_gib] : {std::tuple{"gpt-oss-20b", 11.0, 11.5}, {"gpt-oss-120b", 58.0, 60.0}}) {
        const auto* p = mkmodel::find_preset(name);
        ASSERT_NE(p, nullptr) << name;
        auto plan = mkmodel::plan_random_model({.hparams = p->hparams, .type = p->default_type,
                                                .expert_type = p->expert_type, .tied = p->tied});
        ASSERT_TRUE(plan) << plan.error().message;
        const double gib = double(plan->data_bytes()) / double(1u << 30);
        EXPECT_GE(gib, min_gib) << name;
        EXPECT_LE(gib, max_gib) << name;
        for (const auto& t : plan->tensors) {
            if (t.spec.role == models::tensor_role::experts) {
                EXPECT_EQ(t.type, quant_type::mxfp4) << t.spec.name;
            }
        }
        EXPECT_EQ(plan->hparams.gpt_oss.sliding_window, 128u);
        EXPECT_TRUE(plan->hparams.gpt_oss.windowed(0));
        EXPECT_FALSE(plan->hparams.gpt_oss.windowed(1));
        EXPECT_EQ(plan->hparams.rope.n_ctx_orig, 4096u);
        EXPECT_FALSE(plan->hparams.rope.yarn_truncate);
    }
    const auto path = write_plan(
        mkmodel::plan_random_model({.hparams = mkmodel::find_preset("tiny-gpt-oss")->hparams,
                                    .type = quant_type::q8_0, .expert_type = quant_type::mxfp4, .seed = 3})
            .value(),
        "gpt-oss-mxfp4.gguf");
    auto files = gguf::model_files::open(path);
    ASSERT_TRUE(files) << files.error().message;
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(files->kv(), arch);
    ASSERT_TRUE(hp) << hp.error().message;
    EXPECT_TRUE(models::check_tensors(*files, *arch, *hp)); // the loader's own table, types and kernels check
}

TEST(synthetic_tokenizer, loads_and_round_trips_text) {
    const auto path = write_plan(preset_plan("tiny-qwen3moe"), "tokenizer.gguf");
    auto tok = tokenizer::load_tokenizer(path);
    ASSERT_TRUE(tok) << tok.error().message;
    EXPECT_EQ(tok->size(), 1024u);
    for (const std::string text : {"Hello, world! the quick brown fox", "  tabs\tand\nnewlines  ",
                                   "ünïcödé 中文 🙂", "digits 0123456789 and <|im_start|>user"}) {
        const auto ids = tok->encode(text);
        EXPECT_EQ(tok->decode(ids), text);
    }
    EXPECT_LT(tok->encode(" the quick brown fox").size(), std::string(" the quick brown fox").size());
    const auto eot = tok->find("<|endoftext|>");
    ASSERT_TRUE(eot);
    EXPECT_TRUE(tok->is_end_of_generation(*eot));
    EXPECT_EQ(tok->description().eos, *eot);
    EXPECT_EQ(tok->encode("<|im_end|>", {.parse_special = true}).size(), 1u);
}

TEST(synthetic_tokenizer, fills_exactly_the_vocabulary_size) {
    for (const std::uint32_t n : {259u, 1000u, 151936u}) {
        auto kv = mkmodel::synthetic_tokenizer(n);
        ASSERT_TRUE(kv);
        EXPECT_EQ(*mkmodel::token_count(*kv), n);
        EXPECT_TRUE(mkmodel::check_tokenizer(*kv));
    }
    EXPECT_FALSE(mkmodel::synthetic_tokenizer(258));
}

TEST(tokenizer_from, a_gguf_file_gives_every_tokenizer_key) {
    const fs::path fixture = fs::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab" / "ggml-vocab-gpt-2.gguf";
    auto source = gguf::model_files::open(fixture);
    ASSERT_TRUE(source) << source.error().message;
    auto kv = mkmodel::tokenizer_from(fixture, 1024);
    ASSERT_TRUE(kv) << kv.error().message;
    std::size_t n = 0;
    for (const auto& e : source->kv().entries()) {
        if (e.key.starts_with("tokenizer.")) {
            ++n;
            const auto* v = kv->find(e.key);
            ASSERT_NE(v, nullptr) << e.key;
            EXPECT_TRUE(*v == e.value) << e.key;
        }
    }
    EXPECT_EQ(kv->size(), n);
    EXPECT_TRUE(mkmodel::check_tokenizer(*kv));
}
