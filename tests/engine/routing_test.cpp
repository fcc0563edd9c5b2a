// Routing recorded and replayed: a recording of the bundled model replayed on it fetches the same experts, replayed
// on another file of the same geometry it fetches the recording's experts instead of that file's own; sessions
// record through model_options; truncated, garbage and mismatched recordings are refused with a message.
#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/experts/routing_log.hpp"
#include "runtime/experts/routing_stats.hpp"
#include "runtime/models/forward.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

namespace sluice {
namespace {

using kernels::quant_type;
using test::load_model;
using test::run_sync;
using test::scratch_dir;
using test::tiny_model;

std::filesystem::path bundled_model() { return std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf"; }

experts::routing_geometry geometry_of(const model& m) {
    return {m.hparams().n_layer, m.hparams().n_expert, m.hparams().n_expert_used};
}

// Every fetch and prefetch the forward pass makes, passed on to the model's own source.
class logging_experts final : public experts::expert_source {
public:
    explicit logging_experts(experts::expert_source& inner) : inner_(&inner) {}
    void fetch(experts::expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) override {
        fetched.emplace_back(layer, std::vector<std::int32_t>(ids.begin(), ids.end()));
        inner_->fetch(batch, layer, ids);
    }
    void prefetch(experts::expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) override {
        prefetched.emplace_back(layer, std::vector<std::int32_t>(ids.begin(), ids.end()));
        inner_->prefetch(batch, layer, ids);
    }
    void release(experts::expert_batch& batch, std::size_t i) noexcept override { inner_->release(batch, i); }
    [[nodiscard]] bool wants_prediction() const noexcept override { return true; }

    std::vector<std::pair<std::uint32_t, std::vector<std::int32_t>>> fetched, prefetched;

private:
    experts::expert_source* inner_;
};

struct pass {
    std::vector<std::pair<std::uint32_t, std::vector<std::int32_t>>> fetched, prefetched;
    std::vector<float> logits;
};

// A prefill of 12 tokens then 6 single-token steps through a fresh runner on `m`, routing through `log`.
pass run_tokens(const std::shared_ptr<model>& m, experts::routing_log* log) {
    logging_experts source(m->experts());
    models::forward_runner runner(m->arch(), m->hparams(), m->weights(), m->pool(), source, 16);
    runner.set_routing(log);
    models::kv_cache cache(models::cache_layout_of(m->arch(), m->hparams()), 64);
    std::mt19937 rng(5);
    std::vector<std::int32_t> tokens(18);
    for (auto& t : tokens) {
        t = static_cast<std::int32_t>(rng() % m->hparams().n_vocab);
    }
    pass out;
    std::vector<float> logits;
    auto step = [&](std::span<const std::int32_t> batch) {
        auto r = run_sync<result<void>>([&] { return runner.forward(cache, batch, models::logits_mode::last, logits); });
        ASSERT_TRUE(r) << r.error().message;
        out.logits.insert(out.logits.end(), logits.begin(), logits.end());
    };
    step(std::span(tokens).first(12));
    for (std::size_t i = 12; i < tokens.size(); ++i) {
        step(std::span(tokens).subspan(i, 1));
    }
    out.fetched = std::move(source.fetched);
    out.prefetched = std::move(source.prefetched);
    return out;
}

std::filesystem::path record(const std::shared_ptr<model>& m, const std::string& name, pass* result = nullptr) {
    const auto path = scratch_dir() / name;
    auto log = experts::routing_log::open(path, {}, geometry_of(*m), "recorder");
    EXPECT_TRUE(log) << log.error().message;
    auto p = run_tokens(m, log->get());
    if (result) {
        *result = std::move(p);
    }
    return path;
}

TEST(routing, replay_on_the_recorded_model_fetches_the_same_experts_and_computes_the_same_logits) {
    const auto m = load_model(bundled_model(), 16);
    pass recorded;
    const auto path = record(m, "bundled.routing", &recorded);
    auto trace = experts::routing_trace::load(path);
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_EQ(trace->size(), 18u);
    EXPECT_EQ(trace->geometry(), geometry_of(*m));
    EXPECT_EQ(trace->header().model_name, "recorder");

    auto replay = experts::routing_log::open({}, path, geometry_of(*m), "");
    ASSERT_TRUE(replay) << replay.error().message;
    const auto replayed = run_tokens(m, replay->get());
    EXPECT_EQ(replayed.fetched, recorded.fetched);
    EXPECT_EQ(replayed.prefetched, recorded.prefetched);
    EXPECT_EQ(replayed.logits, recorded.logits); // same experts, same weights: the same computation
    EXPECT_EQ((*replay)->replayed(), 18u);
}

TEST(routing, the_recording_holds_what_the_forward_pass_fetched_and_prefetched) {
    const auto m = load_model(bundled_model(), 16);
    pass recorded;
    const auto path = record(m, "contents.routing", &recorded);
    const auto trace = experts::routing_trace::load(path).value();
    const auto& g = trace.geometry();
    // The first fetch of each layer is the prefill's 12 tokens: the distinct experts they chose.
    for (std::uint32_t l = 0; l < g.layers; ++l) {
        std::vector<std::int32_t> chosen;
        for (std::uint64_t t = 0; t < 12; ++t) {
            for (const auto e : trace.experts(t, l)) {
                chosen.push_back(e);
            }
            EXPECT_EQ(trace.sequence(t), trace.sequence(0));
            EXPECT_EQ(trace.position(t), t);
        }
        std::sort(chosen.begin(), chosen.end());
        chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
        EXPECT_EQ(recorded.fetched[l], std::make_pair(l, chosen));
        float sum = 0;
        for (const auto w : trace.weights(0, l)) {
            sum += w;
        }
        EXPECT_GT(sum, 0.0f);
        // Every layer but the last predicted its successor.
        EXPECT_EQ(trace.predicted(0, l)[0] == experts::no_expert, l + 1 == g.layers) << "layer " << l;
    }
}

TEST(routing, replay_on_another_file_of_the_same_geometry_follows_the_recording) {
    const auto a = load_model(tiny_model("qwen3moe", quant_type::f32, 1), 16);
    const auto b = load_model(tiny_model("qwen3moe", quant_type::f32, 2), 16);
    ASSERT_EQ(geometry_of(*a), geometry_of(*b));
    pass on_a;
    const auto path = record(a, "a.routing", &on_a);
    const auto own_b = run_tokens(b, nullptr);
    ASSERT_NE(own_b.fetched, on_a.fetched) << "the two files should route differently on their own";

    // Replayed on b, and recorded again there: b fetches what a chose, and records a's routing.
    const auto again = scratch_dir() / "b-replaying-a.routing";
    auto replay = experts::routing_log::open(again, path, geometry_of(*b), "b");
    ASSERT_TRUE(replay) << replay.error().message;
    const auto replayed = run_tokens(b, replay->get());
    EXPECT_EQ(replayed.fetched, on_a.fetched);
    EXPECT_EQ(replayed.prefetched, on_a.prefetched);
    EXPECT_NE(replayed.logits, on_a.logits); // b's weights still compute
    const auto ta = experts::routing_trace::load(path).value();
    const auto tb = experts::routing_trace::load(again).value();
    ASSERT_EQ(ta.size(), tb.size());
    for (std::uint64_t t = 0; t < ta.size(); ++t) {
        for (std::uint32_t l = 0; l < ta.geometry().layers; ++l) {
            EXPECT_TRUE(std::ranges::equal(ta.experts(t, l), tb.experts(t, l)));
            EXPECT_TRUE(std::ranges::equal(ta.weights(t, l), tb.weights(t, l)));
            EXPECT_TRUE(std::ranges::equal(ta.predicted(t, l), tb.predicted(t, l)));
        }
    }
}

TEST(routing, a_replay_past_the_recordings_end_starts_over) {
    const auto m = load_model(bundled_model(), 16);
    pass recorded;
    const auto path = record(m, "wrap.routing", &recorded);
    auto replay = experts::routing_log::open({}, path, geometry_of(*m), "");
    ASSERT_TRUE(replay);
    run_tokens(m, replay->get());
    const auto second = run_tokens(m, replay->get());
    EXPECT_EQ(second.fetched, recorded.fetched);
    EXPECT_EQ((*replay)->replayed(), 36u);
}

TEST(routing, a_session_records_through_model_options) {
    model_options opts;
    opts.n_threads = 2;
    opts.record_routing = scratch_dir() / "session.routing";
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(bundled_model(), opts); });
    ASSERT_TRUE(m) << m.error().message;
    {
        session s(*m, 64);
        generate_request req;
        req.prompt_tokens = {1, 2, 3, 4, 5};
        req.max_tokens = 4;
        req.ignore_eos = true;
        run_sync<int>([&]() -> boost::asio::awaitable<int> {
            auto stream = s.generate(std::move(req));
            while (true) {
                auto ev = co_await stream.next();
                if (!ev || !*ev) {
                    break;
                }
            }
            co_return 0;
        });
    }
    const auto trace = experts::routing_trace::load(opts.record_routing);
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_GE(trace->size(), 8u); // the prompt and the generated tokens that went back through the model
    EXPECT_EQ((*m)->routing()->recorded(), trace->size());
    const auto stats = experts::routing_statistics(*trace);
    EXPECT_EQ(stats.size(), (*m)->hparams().n_layer);
}

// Bad files ------------------------------------------------------------------------------------------------

std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(raw.size());
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
}

std::string parse_error(std::span<const std::byte> bytes) {
    auto t = experts::routing_trace::parse(bytes, "bad.routing");
    return t ? std::string() : t.error().message;
}

TEST(routing, every_truncation_of_a_recording_is_refused_with_a_message) {
    const auto m = load_model(bundled_model(), 16);
    const auto bytes = read_bytes(record(m, "truncate.routing"));
    ASSERT_TRUE(experts::routing_trace::parse(bytes, "whole"));
    for (std::size_t n = 0; n < bytes.size(); n += (n < 256 ? 1 : 97)) {
        const auto e = parse_error(std::span(bytes).first(n));
        EXPECT_NE(e.find("bad.routing: "), std::string::npos) << n << ": " << e;
        EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("wrong size") != std::string::npos ||
                    e.find("magic") != std::string::npos)
            << n << ": " << e;
    }
    auto longer = bytes;
    longer.push_back(std::byte{0});
    EXPECT_NE(parse_error(longer).find("wrong size"), std::string::npos);
}

TEST(routing, garbage_and_corrupt_fields_are_refused_naming_the_field) {
    const auto m = load_model(bundled_model(), 16);
    const auto good = read_bytes(record(m, "corrupt.routing"));
    std::mt19937 rng(3);
    for (int i = 0; i < 200; ++i) { // random bytes of random lengths, and random bytes after a valid magic
        std::vector<std::byte> junk(rng() % 600);
        for (auto& b : junk) {
            b = static_cast<std::byte>(rng());
        }
        EXPECT_FALSE(parse_error(junk).empty());
        if (junk.size() > 8) {
            std::memcpy(junk.data(), experts::routing_magic, 8);
            EXPECT_FALSE(parse_error(junk).empty());
        }
    }
    auto with = [&](std::size_t at, std::uint32_t v) {
        auto b = good;
        std::memcpy(b.data() + at, &v, sizeof v);
        return parse_error(b);
    };
    EXPECT_NE(with(8, 2).find("version 2 is not supported"), std::string::npos);
    EXPECT_NE(with(16, 0).find("layers 0"), std::string::npos);
    EXPECT_NE(with(20, 70000).find("experts 70000"), std::string::npos);
    EXPECT_NE(with(24, 1000).find("top_k 1000"), std::string::npos);
    EXPECT_NE(with(28, 1u << 30).find("model name"), std::string::npos);
    EXPECT_NE(with(12, 3).find("header_bytes 3"), std::string::npos);
    const auto header = experts::routing_header_bytes(std::strlen("recorder"));
    auto bad_id = good;
    const std::uint16_t id = 60000;
    std::memcpy(bad_id.data() + header + 8, &id, sizeof id); // token 0, layer 0, first expert
    EXPECT_NE(parse_error(bad_id).find("token 0 layer 0: expert id past"), std::string::npos);
    auto bad_weight = good;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bad_weight.data() + header + 8 + 2 * m->hparams().n_expert_used, &nan, sizeof nan);
    EXPECT_NE(parse_error(bad_weight).find("not finite"), std::string::npos);
}

TEST(routing, a_recording_of_another_geometry_is_refused_at_load) {
    const auto path = record(load_model(bundled_model(), 16), "geometry.routing");
    const auto other = tiny_model("qwen3moe", quant_type::f32, 1);
    model_options opts;
    opts.n_threads = 1;
    opts.replay_routing = path;
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(other, opts); });
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("does not fit this model's"), std::string::npos) << m.error().message;
    EXPECT_NE(m.error().message.find(path.string()), std::string::npos) << m.error().message;

    opts.replay_routing = scratch_dir() / "missing.routing";
    m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(other, opts); });
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("cannot open the routing recording"), std::string::npos) << m.error().message;
}

TEST(routing, a_dense_model_cannot_record_routing) {
    model_options opts;
    opts.n_threads = 1;
    opts.record_routing = scratch_dir() / "dense.routing";
    auto m = run_sync<result<std::shared_ptr<model>>>(
        [&] { return model::load(tiny_model("qwen3", quant_type::f32), opts); });
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("no routed experts"), std::string::npos) << m.error().message;
}

} // namespace
} // namespace sluice
