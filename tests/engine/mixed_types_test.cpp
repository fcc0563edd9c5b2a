// A model whose tensors use many weight types, as "dynamic" quantisations do (Q2_K to Q8_0, the IQ family, MXFP4,
// TQ2_0 side by side, a different mix in each layer): it loads, its memory plan counts each tensor at its own
// type's size, and streaming its experts through the smallest cache gives output bit-identical to resident.
#include "runtime/engine/session.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "runtime/experts/expert_layout.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace sluice {
namespace {

using kernels::quant_type;
using test::run_sync;

// The types given to the weight tensors in turn (norms and routers stay F32).
constexpr quant_type mix[] = {quant_type::q2_k,  quant_type::iq2_xxs, quant_type::q3_k,   quant_type::iq3_xxs,
                              quant_type::q4_k,  quant_type::iq1_s,   quant_type::q5_k,   quant_type::iq2_xs,
                              quant_type::q6_k,  quant_type::iq3_s,   quant_type::q8_0,   quant_type::iq2_s,
                              quant_type::mxfp4, quant_type::iq1_m,   quant_type::iq4_xs, quant_type::tq2_0,
                              quant_type::q4_0,  quant_type::iq4_nl,  quant_type::q5_0,   quant_type::tq1_0};

std::filesystem::path mixed_model() {
    return test::tiny_model("qwen3moe", quant_type::q4_k, 5, "-mixed", [](void* p) {
        auto& plan = *static_cast<mkmodel::random_model_plan*>(p);
        std::size_t next = 0;
        for (auto& t : plan.tensors) {
            if (t.type != quant_type::f32) {
                t.type = mix[next++ % std::size(mix)];
            }
        }
    });
}

model_options options(std::uint32_t n_batch) {
    model_options o;
    o.n_batch = n_batch;
    o.n_ctx = 256;
    o.n_threads = 2;
    o.disk_bandwidth = 1e9; // no probe
    return o;
}

std::shared_ptr<model> load(model_options o) {
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(mixed_model(), o); });
    if (!m) {
        throw std::runtime_error(m.error().message);
    }
    return *m;
}

std::vector<float> evaluate(const std::shared_ptr<model>& m, std::span<const std::int32_t> tokens) {
    session s(m);
    std::vector<float> logits;
    auto r = run_sync<result<void>>([&] { return s.evaluate(tokens, logits); });
    if (!r) {
        throw std::runtime_error(r.error().message);
    }
    return logits;
}

TEST(mixed_types, every_tensor_keeps_its_type_and_the_plan_counts_its_real_bytes) {
    auto files = gguf::model_files::open(mixed_model());
    ASSERT_TRUE(files) << files.error().message;
    std::set<quant_type> types;
    std::uint64_t expert_bytes = 0;
    for (const auto& t : files->tensors()) {
        types.insert(t.type);
        EXPECT_EQ(t.bytes, *kernels::row_bytes(t.type, t.ne[0]) * (t.n_elements / t.ne[0])) << t.name;
        if (t.n_dims == 3) {
            expert_bytes += t.bytes;
        }
    }
    // The tiny model has 16 weight matrices: the first 16 types of the mix, and F32.
    EXPECT_EQ(types.size(), 17u);
    const models::architecture* arch = nullptr;
    auto hp = models::load_hparams(files->kv(), arch);
    ASSERT_TRUE(hp);
    auto layout = experts::make_expert_layout(*files, *hp);
    ASSERT_TRUE(layout);
    EXPECT_EQ(layout->total_bytes, expert_bytes);
    // One expert of layer l is its three slabs, each a row count times its own type's row size.
    for (std::uint32_t l = 0; l < hp->n_layer; ++l) {
        for (std::uint32_t part = 0; part < 3; ++part) {
            static constexpr const char* names[] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
            const auto* t = files->find_tensor("blk." + std::to_string(l) + "." + names[part] + ".weight");
            ASSERT_NE(t, nullptr);
            EXPECT_EQ(layout->layers[l].slabs[part].bytes, *kernels::row_bytes(t->type, t->ne[0]) * t->ne[1]);
        }
    }
    const auto m = load(options(16));
    EXPECT_EQ(m->plan().expert_bytes, expert_bytes);
}

TEST(mixed_types, streaming_the_experts_gives_the_resident_output) {
    std::mt19937 rng(11);
    std::vector<std::int32_t> tokens(24);
    for (auto& t : tokens) {
        t = static_cast<std::int32_t>(rng() % 512u);
    }
    const auto resident = load(options(16));
    ASSERT_FALSE(resident->plan().streams());
    const auto expected = evaluate(resident, tokens);
    for (float v : expected) {
        ASSERT_TRUE(std::isfinite(v));
    }
    // A budget with room for the dense part and a few expert slots only.
    auto o = options(16);
    const auto& p = resident->plan();
    o.memory_budget = p.dense_bytes + p.kv_bytes + p.compute_bytes + 5 * p.slot_bytes;
    const auto streamed = load(o);
    ASSERT_TRUE(streamed->plan().streams());
    EXPECT_EQ(evaluate(streamed, tokens), expected);
    EXPECT_GT(streamed->expert_counters().bytes_read, 0u);
}

} // namespace
} // namespace sluice
