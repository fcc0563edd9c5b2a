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
    void prefetch_ahead(experts::expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids,
                        std::uint32_t ahead) override {
        if (ahead == 1) {
            prefetch(batch, layer, ids);
            return;
        }
        prefetched2.emplace_back(layer, std::vector<std::int32_t>(ids.begin(), ids.end()));
        inner_->prefetch_ahead(batch, layer, ids, ahead);
    }
    void release(experts::expert_batch& batch, std::size_t i) noexcept override { inner_->release(batch, i); }
    [[nodiscard]] bool wants_prediction() const noexcept override { return true; }
    [[nodiscard]] std::uint32_t prediction_depth() const noexcept override { return depth; }

    std::uint32_t depth = 1;
    std::vector<std::pair<std::uint32_t, std::vector<std::int32_t>>> fetched, prefetched, prefetched2;

private:
    experts::expert_source* inner_;
};

struct pass {
    std::vector<std::pair<std::uint32_t, std::vector<std::int32_t>>> fetched, prefetched, prefetched2;
    std::vector<float> logits;
};

// A prefill of 12 tokens then 6 single-token steps through a fresh runner on `m`, routing through `log`, with
// predictions `depth` layers ahead.
pass run_tokens(const std::shared_ptr<model>& m, experts::routing_log* log, std::uint32_t depth = 1) {
    logging_experts source(m->experts());
    source.depth = depth;
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
    out.prefetched2 = std::move(source.prefetched2);
    return out;
}

std::filesystem::path record(const std::shared_ptr<model>& m, const std::string& name, pass* result = nullptr,
                             std::uint32_t depth = 1) {
    const auto path = scratch_dir() / name;
    auto log = experts::routing_log::open(path, {}, geometry_of(*m), "recorder");
    EXPECT_TRUE(log) << log.error().message;
    auto p = run_tokens(m, log->get(), depth);
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
        // Every layer but the last predicted its successor, every layer but the last two the layer after.
        EXPECT_EQ(trace.predicted(0, l)[0] == experts::no_expert, l + 1 == g.layers) << "layer " << l;
        EXPECT_EQ(trace.predicted2(0, l)[0] == experts::no_expert, l + 2 >= g.layers) << "layer " << l;
    }
    EXPECT_TRUE(trace.has_depth2());
    EXPECT_EQ(trace.header().version, experts::routing_version);
}

/// The distinct experts of `ids`, sorted (what the forward pass fetches or prefetches for one token).
std::vector<std::int32_t> distinct(std::span<const std::uint16_t> ids) {
    std::vector<std::int32_t> out(ids.begin(), ids.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

TEST(routing, depth_two_prefetches_what_two_layers_ahead_predicted_and_the_recording_holds_it) {
    const auto m = load_model(bundled_model(), 16);
    ASSERT_GE(m->hparams().n_layer, 3u);
    pass recorded;
    const auto path = record(m, "depth2.routing", &recorded, 2);
    const auto trace = experts::routing_trace::load(path).value();
    const auto& g = trace.geometry();
    // The decode steps (one token each): at layer l the forward pass prefetched, two layers ahead, the experts the
    // recording says layer l predicted for layer l + 2, after prefetching those it predicted for layer l + 1.
    std::vector<std::pair<std::uint32_t, std::vector<std::int32_t>>> expected1, expected2;
    for (std::uint64_t t = 12; t < trace.size(); ++t) {
        for (std::uint32_t l = 0; l + 1 < g.layers; ++l) {
            expected1.emplace_back(l + 1, distinct(trace.predicted(t, l)));
            if (l + 2 < g.layers) {
                expected2.emplace_back(l + 2, distinct(trace.predicted2(t, l)));
            }
        }
    }
    auto tail = [](const auto& v, std::size_t n) {
        return std::vector(v.end() - static_cast<std::ptrdiff_t>(n), v.end());
    };
    ASSERT_GE(recorded.prefetched.size(), expected1.size());
    ASSERT_GE(recorded.prefetched2.size(), expected2.size());
    EXPECT_EQ(tail(recorded.prefetched, expected1.size()), expected1);
    EXPECT_EQ(tail(recorded.prefetched2, expected2.size()), expected2);

    // Replayed at depth 2 the recording's depth-2 predictions are what is prefetched; at depth 1 nothing is.
    auto replay = experts::routing_log::open({}, path, g, "");
    ASSERT_TRUE(replay) << replay.error().message;
    const auto again = run_tokens(m, replay->get(), 2);
    EXPECT_EQ(again.fetched, recorded.fetched);
    EXPECT_EQ(again.prefetched, recorded.prefetched);
    EXPECT_EQ(again.prefetched2, recorded.prefetched2);
    EXPECT_EQ(again.logits, recorded.logits);
    auto replay1 = experts::routing_log::open({}, path, g, "");
    const auto depth1 = run_tokens(m, replay1->get(), 1);
    EXPECT_TRUE(depth1.prefetched2.empty());
    EXPECT_EQ(depth1.prefetched, recorded.prefetched);
    EXPECT_EQ(depth1.logits, recorded.logits); // prediction depth changes what is read, never what is computed
}

/// `v2` (a version-2 recording's bytes) in version 1: the same header but the version, each layer's prediction
/// two layers ahead left out.
std::vector<std::byte> as_version1(std::span<const std::byte> v2, const experts::routing_trace& t) {
    const auto& g = t.geometry();
    const auto header = experts::routing_header_bytes(t.header().model_name.size());
    std::vector<std::byte> out(v2.begin(), v2.begin() + static_cast<std::ptrdiff_t>(header));
    const std::uint32_t one = 1;
    std::memcpy(out.data() + 8, &one, sizeof one);
    const std::size_t k = g.top_k, layer_v2 = k * 10, layer_v1 = k * 8;
    for (std::uint64_t i = 0; i < t.size(); ++i) {
        const auto* rec = v2.data() + header + i * experts::routing_record_bytes(g, 2);
        out.insert(out.end(), rec, rec + 8);
        for (std::uint32_t l = 0; l < g.layers; ++l) {
            const auto* layer = rec + 8 + l * layer_v2;
            out.insert(out.end(), layer, layer + layer_v1);
        }
    }
    EXPECT_EQ(out.size(), header + t.size() * experts::routing_record_bytes(g, 1));
    return out;
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

TEST(routing, a_session_records_through_set_routing) {
    const auto m = load_model(bundled_model(), 16);
    const auto path = (scratch_dir() / "session.routing").string();
    ASSERT_TRUE(m->set_routing(path, {}));
    {
        session s(m, 64);
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
    const auto trace = experts::routing_trace::load(path);
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_GE(trace->size(), 8u); // the prompt and the generated tokens that went back through the model
    EXPECT_EQ(m->routing()->recorded(), trace->size());
    const auto stats = experts::routing_statistics(*trace);
    EXPECT_EQ(stats.size(), m->hparams().n_layer);
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
    EXPECT_NE(with(8, 3).find("version 3 is not supported"), std::string::npos);
    EXPECT_NE(with(8, 0).find("version 0 is not supported"), std::string::npos);
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

TEST(routing, a_version_1_recording_still_reads_and_replays_without_depth_two) {
    const auto m = load_model(bundled_model(), 16);
    pass recorded;
    const auto path = record(m, "for-v1.routing", &recorded, 2);
    const auto v2 = read_bytes(path);
    const auto t2 = experts::routing_trace::parse(v2, "v2").value();
    const auto v1 = as_version1(v2, t2);
    auto t1 = experts::routing_trace::parse(v1, "v1");
    ASSERT_TRUE(t1) << t1.error().message;
    EXPECT_EQ(t1->header().version, 1u);
    EXPECT_FALSE(t1->has_depth2());
    ASSERT_EQ(t1->size(), t2.size());
    for (std::uint64_t t = 0; t < t1->size(); ++t) {
        for (std::uint32_t l = 0; l < t1->geometry().layers; ++l) {
            EXPECT_TRUE(std::ranges::equal(t1->experts(t, l), t2.experts(t, l)));
            EXPECT_TRUE(std::ranges::equal(t1->weights(t, l), t2.weights(t, l)));
            EXPECT_TRUE(std::ranges::equal(t1->predicted(t, l), t2.predicted(t, l)));
            EXPECT_TRUE(std::ranges::all_of(t1->predicted2(t, l), [](auto e) { return e == experts::no_expert; }));
        }
    }
    // Its statistics have no depth-2 recall; the others are the version-2 file's.
    const auto s1 = experts::mean_statistics(experts::routing_statistics(*t1));
    const auto s2 = experts::mean_statistics(experts::routing_statistics(t2));
    EXPECT_EQ(s1.predicted2, 0u);
    EXPECT_GT(s2.predicted2, 0u);
    EXPECT_GT(s2.prediction2_recall, 0.0);
    EXPECT_EQ(s1.prediction_recall, s2.prediction_recall);
    // Replayed at depth 2 it prefetches nothing two layers ahead, and the rest as recorded.
    const auto v1_path = scratch_dir() / "v1.routing";
    {
        std::ofstream out(v1_path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(v1.data()), static_cast<std::streamsize>(v1.size()));
    }
    auto replay = experts::routing_log::open({}, v1_path, geometry_of(*m), "");
    ASSERT_TRUE(replay) << replay.error().message;
    const auto replayed = run_tokens(m, replay->get(), 2);
    EXPECT_EQ(replayed.fetched, recorded.fetched);
    EXPECT_EQ(replayed.prefetched, recorded.prefetched);
    EXPECT_TRUE(replayed.prefetched2.empty());
    // A version-1 file cut short, or a version-1 header on a version-2 body, is refused.
    EXPECT_NE(parse_error(std::span(v1).first(v1.size() - 1)).find("truncated"), std::string::npos);
    auto v1_header_on_v2 = v2;
    const std::uint32_t one = 1;
    std::memcpy(v1_header_on_v2.data() + 8, &one, sizeof one);
    EXPECT_NE(parse_error(v1_header_on_v2).find("wrong size"), std::string::npos);
}

TEST(routing, a_recording_of_another_geometry_is_refused) {
    const auto path = record(load_model(bundled_model(), 16), "geometry.routing");
    const auto other = load_model(tiny_model("qwen3moe", quant_type::f32, 1), 16);
    auto r = other->set_routing({}, path.string());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("does not fit this model's"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(path.string()), std::string::npos) << r.error().message;
    EXPECT_EQ(other->routing(), nullptr);

    r = other->set_routing({}, (scratch_dir() / "missing.routing").string());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("cannot open the routing recording"), std::string::npos) << r.error().message;
}

TEST(routing, a_dense_model_cannot_record_routing) {
    const auto m = load_model(tiny_model("qwen3", quant_type::f32), 16);
    const auto r = m->set_routing((scratch_dir() / "dense.routing").string(), {});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("no routed experts"), std::string::npos) << r.error().message;
}

} // namespace
} // namespace sluice
