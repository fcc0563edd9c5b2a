// The engine end to end on tiny random models: batched prefill against token-by-token decoding for every
// architecture and weight type, load errors, and generation (seeds, stops, limits, cancellation, reuse).
#include "runtime/engine/session.hpp"
#include "runtime/models/forward.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace sluice {
namespace {

using kernels::quant_type;
using test::load_model;
using test::random_tokens;
using test::run_sync;
using test::tiny_model;

std::vector<float> evaluate(const std::shared_ptr<model>& m, std::span<const std::int32_t> tokens, bool one_by_one) {
    session s(m);
    std::vector<float> all;
    std::vector<float> logits;
    if (!one_by_one) {
        auto r = run_sync<result<void>>([&] { return s.evaluate(tokens, all); });
        EXPECT_TRUE(r) << r.error().message;
        return all;
    }
    for (const auto t : tokens) {
        auto r = run_sync<result<void>>([&] { return s.evaluate(std::span(&t, 1), logits); });
        EXPECT_TRUE(r) << r.error().message;
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

struct arch_case {
    std::string arch;
    quant_type type;
};

class every_arch : public ::testing::TestWithParam<arch_case> {};

TEST_P(every_arch, batched_prefill_equals_token_by_token) {
    const auto path = tiny_model(GetParam().arch, GetParam().type);
    const auto batched = load_model(path, 16);
    const auto single = load_model(path, 1);
    const auto tokens = random_tokens(40, 7);
    const auto a = evaluate(batched, tokens, false);
    const auto b = evaluate(single, tokens, true);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), tokens.size() * 512);
    float max_abs = 0.0f, max_diff = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_TRUE(std::isfinite(a[i])) << "logit " << i;
        max_abs = std::max(max_abs, std::abs(a[i]));
        max_diff = std::max(max_diff, std::abs(a[i] - b[i]));
    }
    EXPECT_GT(max_abs, 0.1f) << "logits are suspiciously flat";
    EXPECT_LE(max_diff, 1e-4f * max_abs) << "max |logit| " << max_abs;
}

TEST_P(every_arch, logits_depend_on_context) {
    const auto m = load_model(tiny_model(GetParam().arch, GetParam().type), 16);
    auto t1 = random_tokens(8, 1);
    auto t2 = t1;
    t2[0] = (t2[0] + 1) % 512;
    const auto a = evaluate(m, t1, false);
    const auto b = evaluate(m, t2, false);
    // The last position sees the changed first token only through attention.
    float diff = 0.0f;
    for (std::size_t i = 7 * 512; i < 8 * 512; ++i) {
        diff = std::max(diff, std::abs(a[i] - b[i]));
    }
    EXPECT_GT(diff, 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(
    engine, every_arch,
    ::testing::Values(arch_case{"llama", quant_type::f32}, arch_case{"llama", quant_type::q4_k},
                      arch_case{"mixtral", quant_type::q8_0}, arch_case{"qwen2", quant_type::f16},
                      arch_case{"qwen3", quant_type::q6_k}, arch_case{"qwen2moe", quant_type::q8_0},
                      arch_case{"qwen3moe", quant_type::q4_k}, arch_case{"qwen3moe", quant_type::f32},
                      arch_case{"olmoe", quant_type::q5_k}, arch_case{"gpt-oss", quant_type::mxfp4},
                      arch_case{"qwen35moe", quant_type::q4_k}, arch_case{"qwen35", quant_type::q8_0},
                      arch_case{"qwen3next", quant_type::f32}),
    [](const auto& info) {
        auto name = info.param.arch + "_" + std::string(kernels::traits_of(info.param.type).name);
        std::replace(name.begin(), name.end(), '-', '_');
        return name;
    });

// An expert source whose experts are never in memory when fetched: each becomes ready later, on the io_context,
// as a disk-backed cache's would, so every MoE layer stalls, the runner awaits the fetch and the layer resumes.
class deferred_experts final : public experts::expert_source {
public:
    explicit deferred_experts(const models::model_weights& w) : inner_(w) {}
    void fetch(experts::expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) override {
        inner_.fetch(batch, layer, ids); // the pointers, published ready: held back until later
        for (std::size_t i = 0; i < batch.size(); ++i) {
            batch.publish(i, experts::entry_state::waiting);
        }
        ++deferred;
        boost::asio::post(executor_, [&batch] {
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (batch.state(i) == experts::entry_state::waiting) {
                    batch.publish(i, experts::entry_state::ready);
                }
            }
            batch.notify();
        });
    }
    void attach(const boost::asio::any_io_executor& executor) override { executor_ = executor; }
    int deferred = 0;

private:
    experts::resident_experts inner_;
    boost::asio::any_io_executor executor_;
};

TEST_P(every_arch, awaited_expert_lookups_give_the_same_logits) {
    const auto m = load_model(tiny_model(GetParam().arch, GetParam().type), 16);
    const auto tokens = random_tokens(20, 11);
    const auto expected = evaluate(m, tokens, false);
    deferred_experts slow(m->weights());
    models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), slow, 16);
    models::kv_cache cache(models::cache_layout_of(m->arch(), m->hparams()), 64);
    std::vector<float> logits;
    auto r = run_sync<result<void>>([&] { return runner.forward(cache, tokens, models::logits_mode::all, logits); });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(logits, expected);
    EXPECT_EQ(slow.deferred, m->hparams().is_moe() ? 2 * m->hparams().n_layer : 0); // two batches of every MoE layer
}

// Generation helpers -------------------------------------------------------------------------------------

struct outcome {
    std::vector<std::int32_t> tokens;
    std::string text;
    generation_summary summary;
    std::string error;
};

outcome generate(session& s, generate_request req) {
    return run_sync<outcome>([&]() -> boost::asio::awaitable<outcome> {
        outcome o;
        auto stream = s.generate(std::move(req));
        while (true) {
            auto ev = co_await stream.next();
            if (!ev) {
                o.error = ev.error().message;
                break;
            }
            if (!*ev) {
                break;
            }
            if ((*ev)->token >= 0) {
                o.tokens.push_back((*ev)->token);
            }
            o.text += (*ev)->text;
        }
        o.summary = stream.summary();
        co_return o;
    });
}

generate_request sampled(std::uint64_t seed, std::uint32_t n = 24) {
    generate_request r;
    r.prompt = "The quick brown fox";
    r.sampling.temperature = 1.0f;
    r.sampling.top_k = 0;
    r.sampling.top_p = 1.0f;
    r.sampling.min_p = 0.0f;
    r.sampling.seed = seed;
    r.max_tokens = n;
    r.ignore_eos = true;
    return r;
}

std::shared_ptr<model> gen_model() {
    return load_model(tiny_model("qwen3moe", quant_type::q8_0), 16, 128);
}

TEST(generation, same_seed_gives_same_tokens_and_other_seeds_differ) {
    const auto m = gen_model();
    session a(m), b(m), c(m);
    const auto x = generate(a, sampled(42));
    const auto y = generate(b, sampled(42));
    const auto z = generate(c, sampled(43));
    ASSERT_TRUE(x.error.empty()) << x.error;
    EXPECT_EQ(x.tokens.size(), 24u);
    EXPECT_EQ(x.tokens, y.tokens);
    EXPECT_EQ(x.text, y.text);
    EXPECT_NE(x.tokens, z.tokens);
    EXPECT_EQ(x.summary.reason, finish_reason::length);
    EXPECT_EQ(x.summary.completion_tokens, 24u);
}

TEST(generation, stop_string_cuts_the_text_and_ends_the_generation) {
    const auto m = gen_model();
    session a(m);
    const auto full = generate(a, sampled(5, 40));
    ASSERT_GE(full.text.size(), 12u);
    // A stop string from the middle of the text, probably spanning several tokens.
    const std::string stop = full.text.substr(full.text.size() / 2, 4);
    const auto expected = full.text.substr(0, full.text.find(stop));
    auto req = sampled(5, 40);
    req.stop = {stop};
    session b(m);
    const auto cut = generate(b, req);
    EXPECT_EQ(cut.text, expected);
    EXPECT_EQ(cut.summary.reason, finish_reason::stop);
    EXPECT_EQ(cut.summary.stopped_by, stop);
    EXPECT_EQ(full.summary.stopped_by, "");
    EXPECT_LT(cut.summary.completion_tokens, 40u);
}

TEST(generation, full_context_is_reported_not_a_crash) {
    const auto m = load_model(tiny_model("qwen3moe", quant_type::q8_0), 16, 24);
    session s(m);
    auto req = sampled(1, 0);
    const auto o = generate(s, req);
    ASSERT_TRUE(o.error.empty()) << o.error;
    EXPECT_EQ(o.summary.reason, finish_reason::context_full);
    EXPECT_EQ(o.summary.prompt_tokens + o.summary.completion_tokens, 25u); // the last token needs no slot
}

TEST(generation, prompt_longer_than_the_context_is_an_error) {
    const auto m = load_model(tiny_model("qwen3moe", quant_type::q8_0), 16, 8);
    session s(m);
    generate_request req;
    req.prompt_tokens = random_tokens(20, 3);
    const auto o = generate(s, req);
    EXPECT_NE(o.error.find("context"), std::string::npos) << o.error;
}

TEST(generation, bad_sampling_parameters_are_an_error_naming_the_field) {
    const auto m = gen_model();
    session s(m);
    auto req = sampled(1);
    req.sampling.top_p = 2.0f;
    const auto o = generate(s, req);
    EXPECT_NE(o.error.find("top_p"), std::string::npos) << o.error;
}

TEST(generation, token_outside_the_vocabulary_is_an_error) {
    const auto m = gen_model();
    session s(m);
    generate_request req;
    req.prompt_tokens = {1, 2, 100000};
    const auto o = generate(s, req);
    EXPECT_NE(o.error.find("100000"), std::string::npos) << o.error;
}

TEST(generation, next_turn_reuses_the_cached_prefix_and_matches_a_fresh_session) {
    const auto m = gen_model();
    session s(m);
    auto req = sampled(9, 8);
    req.sampling.temperature = 0.0f;
    const auto first = generate(s, req);
    req.prompt_tokens = s.prompt_tokens(req).value();
    req.prompt_tokens.insert(req.prompt_tokens.end(), first.tokens.begin(), first.tokens.end());
    const auto second = generate(s, req);
    EXPECT_GE(second.summary.cached_tokens, req.prompt_tokens.size() - 2);
    session fresh(m);
    const auto reference = generate(fresh, req);
    EXPECT_EQ(fresh.tokens_in_context(), s.tokens_in_context());
    EXPECT_EQ(second.tokens, reference.tokens);
}

TEST(generation, cancellation_slot_ends_the_stream_as_cancelled) {
    const auto m = gen_model();
    session s(m);
    boost::asio::io_context io;
    boost::asio::cancellation_signal signal;
    generation_summary summary;
    int seen = 0;
    auto consume = [&]() -> boost::asio::awaitable<void> {
        auto stream = s.generate(sampled(3, 100));
        while (true) {
            auto ev = co_await stream.next();
            if (!ev || !*ev) {
                break;
            }
            if (++seen == 5) {
                // Cancelled from outside while the next step computes, as a client disconnect would be.
                boost::asio::post(io, [&] { signal.emit(boost::asio::cancellation_type::terminal); });
            }
        }
        summary = stream.summary();
    };
    std::string failure;
    boost::asio::co_spawn(io, consume(), boost::asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e) {
                              try {
                                  if (e) {
                                      std::rethrow_exception(e);
                                  }
                              } catch (const std::exception& x) {
                                  failure = x.what();
                              }
                          }));
    io.run();
    EXPECT_EQ(failure, "");
    EXPECT_EQ(summary.reason, finish_reason::cancelled);
    EXPECT_EQ(summary.completion_tokens, 5u);
}

// Load errors ----------------------------------------------------------------------------------------------

std::string load_error(const std::filesystem::path& path) {
    auto r = test::run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path); });
    return r ? std::string() : r.error().message;
}

TEST(load, missing_tensor_is_named) {
    const auto path = tiny_model("qwen3", quant_type::q8_0, 1, "-missing", [](void* p) {
        auto& plan = *static_cast<mkmodel::random_model_plan*>(p);
        std::erase_if(plan.tensors, [](const auto& t) { return t.spec.name == "blk.1.attn_k_norm.weight"; });
    });
    EXPECT_NE(load_error(path).find("blk.1.attn_k_norm.weight: missing"), std::string::npos) << load_error(path);
}

TEST(load, unsupported_architecture_is_named) {
    const auto path = tiny_model("qwen3", quant_type::q8_0, 1, "-mamba", [](void* p) {
        static_cast<mkmodel::random_model_plan*>(p)->kv.set_string("general.architecture", "mamba");
    });
    const auto e = load_error(path);
    EXPECT_NE(e.find("architecture 'mamba' is not supported"), std::string::npos) << e;
}

TEST(load, wrong_shape_is_named) {
    const auto path = tiny_model("llama", quant_type::f32, 1, "-shape", [](void* p) {
        static_cast<mkmodel::random_model_plan*>(p)->kv.set_u32("llama.feed_forward_length", 768);
    });
    const auto e = load_error(path);
    EXPECT_NE(e.find("blk.0.ffn_gate.weight: shape"), std::string::npos) << e;
}

TEST(load, missing_file_is_an_error) {
    EXPECT_NE(load_error("/nonexistent/model.gguf").find("/nonexistent/model.gguf"), std::string::npos);
}

} // namespace
} // namespace sluice
