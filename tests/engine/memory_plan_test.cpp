// The memory planner on generated models: sizes parsed from text, everything resident when the budget holds the
// model, an expert cache of the bytes left when it does not, an error with the numbers when even the smallest
// cache does not fit, the plan's JSON keys, and the disk probe through the real io_uring reader.
#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/disk_probe.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/routing_curves.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/models/forward.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/asio/this_coro.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace sluice {
namespace {

using kernels::quant_type;
using test::run_sync;
using test::tiny_model;

constexpr std::uint64_t ki = 1024;
constexpr std::uint64_t mi = ki * ki;
constexpr std::uint64_t gi = mi * ki;

/// A generated model opened as the loader sees it: files, hyperparameters and expert layout.
struct opened_model {
    gguf::model_files files;
    models::model_hparams hp;
    experts::expert_layout layout;
};

opened_model open_model(const std::string& arch, quant_type type = quant_type::q8_0) {
    auto files = gguf::model_files::open(tiny_model(arch, type));
    EXPECT_TRUE(files) << files.error().message;
    const models::architecture* a = nullptr;
    auto hp = models::load_hparams(files->kv(), a);
    EXPECT_TRUE(hp) << hp.error().message;
    if (hp->n_vocab == 0) {
        hp->n_vocab = static_cast<std::uint32_t>(files->find_tensor("token_embd.weight")->ne[1]);
    }
    auto layout = experts::make_expert_layout(*files, *hp);
    EXPECT_TRUE(layout) << layout.error().message;
    return {std::move(*files), std::move(*hp), std::move(*layout)};
}

plan_inputs inputs(std::uint64_t budget, std::uint32_t n_ctx = 256, std::uint32_t n_seq = 1) {
    plan_inputs in;
    in.budget = budget;
    in.n_ctx = n_ctx;
    in.n_seq = n_seq;
    in.n_batch = 64;
    in.n_threads = 2;
    return in;
}

/// Dense weights + KV cache + buffers: what every plan holds besides experts.
std::uint64_t fixed_bytes(const memory_plan& p) {
    return p.dense_bytes + p.kv_bytes + p.compute_bytes;
}

TEST(parse_size, accepts_bytes_and_binary_and_decimal_units) {
    const std::pair<const char*, std::uint64_t> good[] = {
        {"0", 0},
        {"4096", 4096},
        {"4GiB", 4 * gi},
        {"4 gib", 4 * gi},
        {"4G", 4 * gi},
        {"1.5G", 3 * gi / 2},
        {"512M", 512 * mi},
        {"512mib", 512 * mi},
        {"3k", 3 * ki},
        {"2T", 2 * gi * ki},
        {"2TiB", 2 * gi * ki},
        {"10KB", 10'000},
        {"8000MB", 8'000'000'000},
        {"16GB", 16'000'000'000},
        {"1TB", 1'000'000'000'000},
        {"0.5 KiB", 512},
        {"  7 ", 7},
        {"100B", 100},
    };
    for (const auto& [text, bytes] : good) {
        auto r = parse_size(text);
        ASSERT_TRUE(r) << text << ": " << r.error().message;
        EXPECT_EQ(*r, bytes) << text;
    }
}

TEST(parse_size, rejects_malformed_text_naming_it) {
    for (const char* text : {"", " ", "abc", "-1", "1.", ".5", "1.5", "4 XB", "4GiBs", "G", "1e9",
                             "99999999999999999999", "20000000T", "1,5G"}) {
        auto r = parse_size(text);
        ASSERT_FALSE(r) << text << " parsed as " << *r;
        EXPECT_NE(r.error().message.find(std::string("\"") + text + "\""), std::string::npos) << r.error().message;
    }
    auto unit = parse_size("4 XB");
    ASSERT_FALSE(unit);
    EXPECT_NE(unit.error().message.find("unknown unit \"XB\""), std::string::npos) << unit.error().message;
}

TEST(default_memory_budget, is_a_share_of_the_memory_available) {
    const auto budget = default_memory_budget();
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::uint64_t total_kib = 0;
    while (meminfo >> key >> total_kib && key != "MemTotal:") {
        meminfo.ignore(256, '\n');
    }
    ASSERT_EQ(key, "MemTotal:");
    EXPECT_GT(budget, 64 * mi);
    EXPECT_LT(budget, total_kib * ki);
}

TEST(plan_memory, holds_everything_resident_when_the_budget_holds_the_model) {
    const auto m = open_model("qwen3moe");
    auto p = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_FALSE(p->streams());
    EXPECT_EQ(p->expert_bytes, m.layout.total_bytes);
    EXPECT_GT(p->expert_bytes, 0u);
    EXPECT_EQ(p->resident_bytes, p->dense_bytes + p->expert_bytes);
    EXPECT_EQ(p->cache_bytes, 0u);
    EXPECT_EQ(p->cache_slots, 0u);
    EXPECT_EQ(p->read_bytes_per_token, 0u);
    EXPECT_EQ(p->tokens_per_s_bound, 0.0);
    EXPECT_EQ(p->total_experts, 16u); // 2 layers of 8
    EXPECT_LE(p->planned_bytes(), p->budget);
    EXPECT_EQ(p->planned_bytes(), fixed_bytes(*p) + p->expert_bytes);
}

TEST(plan_memory, counts_dense_weights_in_4k_blocks_and_the_kv_cache_exactly) {
    const auto m = open_model("qwen3moe");
    std::uint64_t dense = 0;
    for (const auto& t : m.files.tensors()) {
        if (!t.is_expert()) {
            dense += (t.bytes + 4095) / 4096 * 4096;
        }
    }
    auto f16 = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi, 256, 3));
    ASSERT_TRUE(f16) << f16.error().message;
    EXPECT_EQ(f16->dense_bytes, dense);
    // 3 sequences x 256 positions x 2 layers x (128 key + 128 value elements) x 2 bytes.
    EXPECT_EQ(f16->kv_bytes, 3u * 256 * 2 * (128 + 128) * 2);
    auto in = inputs(64 * gi, 256, 3);
    in.kv_type = quant_type::f32;
    auto f32 = plan_memory(m.files, m.hp, m.layout, in);
    ASSERT_TRUE(f32) << f32.error().message;
    EXPECT_EQ(f32->kv_bytes, 2 * f16->kv_bytes);
    // Buffers: at least the fixed overhead, and more for more sequences.
    auto one = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi, 256, 1));
    ASSERT_TRUE(one);
    EXPECT_GE(one->compute_bytes, 64 * mi);
    EXPECT_GT(f16->compute_bytes, one->compute_bytes);
}

/// Bytes a forward_scratch holds once sized for `w`.
std::uint64_t scratch_bytes(const models::model_hparams& hp, const models::model_weights& w, std::uint32_t n_batch) {
    models::forward_scratch s(hp, n_batch);
    s.size_for(hp, w);
    std::uint64_t bytes = 0;
    for (const auto* v : {&s.x, &s.xn, &s.q, &s.k, &s.v, &s.attn, &s.tmp, &s.gate, &s.up, &s.moe_out, &s.sh_gate,
                          &s.sh_up, &s.router, &s.weights}) {
        bytes += v->size() * sizeof(float);
    }
    for (const auto* v : {&s.ids, &s.sel_token}) {
        bytes += v->size() * sizeof(std::int32_t);
    }
    for (const auto* slots : {&s.block_in, &s.wide_in, &s.shared_in, &s.prediction_in}) {
        for (const auto& a : slots->by_type) {
            bytes += a.size();
        }
    }
    return bytes;
}

TEST(plan_memory, matches_what_a_loaded_model_allocates) {
    for (const char* arch : {"qwen3moe", "qwen2moe", "qwen3"}) {
        SCOPED_TRACE(arch);
        const auto m = open_model(arch);
        const auto loaded = test::load_model(tiny_model(arch, quant_type::q8_0), 64, 256, 2);
        auto p = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi, 256, 1));
        ASSERT_TRUE(p) << p.error().message;
        EXPECT_EQ(p->kv_bytes,
                  models::kv_cache(models::cache_layout_of(loaded->arch(), loaded->hparams()), 256).bytes());
        // The batch engine's step runner of 64 tokens and its prefill runner beside it.
        const auto scratch = scratch_bytes(loaded->hparams(), loaded->weights(), 64) +
                             scratch_bytes(loaded->hparams(), loaded->weights(), std::min(64u, prefill_step_tokens));
        EXPECT_GE(p->compute_bytes, 64 * mi + scratch + loaded->hparams().n_vocab * sizeof(float));
        EXPECT_LE(p->compute_bytes, 64 * mi + 2 * scratch + 64 * 1024 * loaded->hparams().n_vocab / 256);
    }
}

// Continuous batching: every slot's KV cache is counted, the step's forward buffers once (one batch engine per
// model), and each slot adds only its logits and sampler rows; the plan with 8 slots holds them all full.
TEST(plan_memory, counts_every_slots_cache_and_the_step_buffers_once) {
    const auto m = open_model("qwen3moe");
    const auto loaded = test::load_model(tiny_model("qwen3moe", quant_type::q8_0), 64, 256, 2);
    auto one = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi, 256, 1));
    auto eight = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi, 256, 8));
    ASSERT_TRUE(one && eight);
    EXPECT_EQ(eight->kv_bytes, 8 * one->kv_bytes);
    const std::uint64_t per_slot = (eight->compute_bytes - one->compute_bytes) / 7;
    EXPECT_EQ(eight->compute_bytes - one->compute_bytes, 7 * per_slot);
    // Logits, sampler, the step's row, and each position's chosen experts (kept when the experts stream).
    EXPECT_GE(per_slot, std::uint64_t{m.hp.n_vocab} * (24 + sizeof(float)) +
                            std::uint64_t{256} * m.hp.n_layer * m.hp.n_expert_used * sizeof(std::int16_t));
    EXPECT_LT(per_slot, scratch_bytes(loaded->hparams(), loaded->weights(), 64) / 4); // not another scratch
}

TEST(plan_memory, streams_experts_through_a_cache_of_the_bytes_left) {
    const auto m = open_model("qwen3moe");
    auto whole = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi));
    ASSERT_TRUE(whole);
    const auto fixed = fixed_bytes(*whole);
    const auto slot = m.layout.slot_bytes;
    ASSERT_GT(slot, 0u);
    auto in = inputs(fixed + 5 * slot + slot / 2);
    in.disk_bandwidth = 2e9;
    auto p = plan_memory(m.files, m.hp, m.layout, in);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_TRUE(p->streams());
    EXPECT_EQ(p->resident_bytes, p->dense_bytes);
    EXPECT_EQ(p->cache_slots, 5u);
    EXPECT_EQ(p->cache_bytes, 5 * slot);
    EXPECT_EQ(p->slot_bytes, slot);
    EXPECT_LE(p->planned_bytes(), p->budget);
    // 2 MoE layers x 2 chosen experts, each read whole when cold; with 2.5 slots per layer of 8 experts a
    // uniformly routed expert is cached 2.5/8 of the time.
    EXPECT_EQ(p->read_bytes_per_token_cold, 2u * 2 * m.layout.read_bytes);
    EXPECT_NEAR(static_cast<double>(p->read_bytes_per_token_uniform),
                static_cast<double>(p->read_bytes_per_token_cold) * (1.0 - 2.5 / 8.0), 1.0);
    // The default is learned routing: the curve of the donor nearest top-2 of 8, at 5 slots of 16 experts.
    std::string_view source;
    const double share = learned_read_share(8, 2, 5.0 / 16.0, &source);
    EXPECT_EQ(p->routing_curve, source);
    EXPECT_NEAR(static_cast<double>(p->read_bytes_per_token), static_cast<double>(p->read_bytes_per_token_cold) * share,
                1.0);
    EXPECT_DOUBLE_EQ(p->disk_bandwidth, 2e9);
    EXPECT_NEAR(p->tokens_per_s_bound, 2e9 / static_cast<double>(p->read_bytes_per_token), 1e-6);
}

TEST(plan_memory, never_plans_more_slots_than_experts) {
    const auto m = open_model("qwen3moe");
    auto whole = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi));
    ASSERT_TRUE(whole);
    // Just below the resident total, yet room for more slots than experts (a slot is larger than an expert).
    auto p = plan_memory(m.files, m.hp, m.layout, inputs(fixed_bytes(*whole) + whole->expert_bytes - 1));
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_TRUE(p->streams());
    EXPECT_LE(p->cache_slots, p->total_experts);
}

TEST(plan_memory, refuses_a_budget_below_the_smallest_cache_naming_the_numbers) {
    const auto m = open_model("qwen3moe");
    auto whole = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi));
    ASSERT_TRUE(whole);
    const auto fixed = fixed_bytes(*whole);
    // The smallest workable cache: 2 x 2 chosen experts.
    auto smallest = plan_memory(m.files, m.hp, m.layout, inputs(fixed + 4 * m.layout.slot_bytes));
    ASSERT_TRUE(smallest) << smallest.error().message;
    EXPECT_EQ(smallest->cache_slots, 4u);
    auto p = plan_memory(m.files, m.hp, m.layout, inputs(fixed + 4 * m.layout.slot_bytes - 1));
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().code, std::errc::not_enough_memory);
    const auto& msg = p.error().message;
    for (const char* part : {"memory budget ", "is too small for this model", "dense weights ", "KV cache ", "buffers ",
                             "the smallest expert cache (4 slots of ", " = "}) {
        EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in: " << msg;
    }
}

TEST(plan_memory, refuses_a_dense_model_that_does_not_fit) {
    const auto m = open_model("qwen3");
    EXPECT_EQ(m.layout.total_count, 0u);
    auto whole = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi));
    ASSERT_TRUE(whole) << whole.error().message;
    EXPECT_FALSE(whole->streams());
    auto p = plan_memory(m.files, m.hp, m.layout, inputs(fixed_bytes(*whole) - 1));
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().code, std::errc::not_enough_memory);
    EXPECT_NE(p.error().message.find("without routed experts"), std::string::npos) << p.error().message;
}

TEST(plan_memory, uses_the_default_budget_when_none_is_given) {
    const auto m = open_model("qwen3moe");
    auto p = plan_memory(m.files, m.hp, m.layout, inputs(0));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_GT(p->budget, 0u);
}

TEST(memory_plan_json, has_every_key_with_the_plan_values) {
    const auto m = open_model("qwen3moe");
    auto whole = plan_memory(m.files, m.hp, m.layout, inputs(64 * gi));
    ASSERT_TRUE(whole);
    const auto resident = to_json(*whole);
    EXPECT_EQ(resident.at("strategy").as_string(), "resident");
    auto p = plan_memory(m.files, m.hp, m.layout, inputs(fixed_bytes(*whole) + 6 * m.layout.slot_bytes));
    ASSERT_TRUE(p);
    const auto o = to_json(*p);
    for (const char* key :
         {"strategy", "budget_bytes", "planned_bytes", "resident_bytes", "dense_bytes", "expert_bytes", "kv_bytes",
          "compute_bytes", "cache_bytes", "cache_slots", "slot_bytes", "total_experts", "read_bytes_per_token_cold",
          "read_bytes_per_token", "disk_bandwidth_bytes_per_s", "tokens_per_s_bound", "bound_basis", "assumptions"}) {
        EXPECT_TRUE(o.contains(key)) << key;
        EXPECT_TRUE(resident.contains(key)) << key;
    }
    EXPECT_EQ(o.at("strategy").as_string(), "stream_experts");
    EXPECT_EQ(o.at("cache_slots").to_number<std::uint64_t>(), 6u);
    EXPECT_EQ(o.at("budget_bytes").to_number<std::uint64_t>(), p->budget);
    EXPECT_EQ(o.at("tokens_per_s_bound").to_number<double>(), 0.0); // no bandwidth given
    EXPECT_NE(o.at("assumptions").as_string().find("uniform routing"), boost::json::string::npos);
}

TEST(probe_disk_bandwidth, reads_expert_slabs_through_io_uring) {
    const auto m = open_model("qwen3moe");
    io::reader_options ro;
    ro.force = io::backend::io_uring;
    std::uint64_t reads = 0;
    auto bw = run_sync<result<double>>([&]() -> boost::asio::awaitable<result<double>> {
        auto reader = io::make_reader(co_await boost::asio::this_coro::executor, ro);
        if (!reader) {
            co_return reader.error();
        }
        auto r = co_await probe_disk_bandwidth(**reader, m.files, m.layout, std::chrono::milliseconds{100});
        reads = (*reader)->counters().reads;
        EXPECT_EQ((*reader)->counters().failures, 0u);
        co_return r;
    });
    ASSERT_TRUE(bw) << bw.error().message;
    EXPECT_GT(*bw, 0.0);
    EXPECT_GE(reads, 1u);
}

TEST(probe_disk_bandwidth, refuses_a_model_without_experts) {
    const auto m = open_model("qwen3");
    auto bw = run_sync<result<double>>([&]() -> boost::asio::awaitable<result<double>> {
        auto reader = io::make_reader(co_await boost::asio::this_coro::executor);
        if (!reader) {
            co_return reader.error();
        }
        co_return co_await probe_disk_bandwidth(**reader, m.files, m.layout, std::chrono::milliseconds{50});
    });
    ASSERT_FALSE(bw);
    EXPECT_NE(bw.error().message.find("no routed experts"), std::string::npos) << bw.error().message;
}

TEST(probe_read_pattern, reads_every_slab_of_each_burst_and_refuses_an_expert_outside_the_model) {
    const auto m = open_model("qwen3moe");
    read_pattern pattern;
    pattern.reads = {{0, 1, false}, {1, 3, true}, {1, 0, false}};
    pattern.burst_ends = {2, 3};
    std::uint64_t reads = 0;
    auto probe = run_sync<result<pattern_probe_result>>([&]() -> boost::asio::awaitable<result<pattern_probe_result>> {
        auto reader = io::make_reader(co_await boost::asio::this_coro::executor);
        if (!reader) {
            co_return reader.error();
        }
        auto r = co_await probe_read_pattern(**reader, m.files, m.layout, pattern, std::chrono::milliseconds{50});
        reads = (*reader)->counters().reads;
        co_return r;
    });
    ASSERT_TRUE(probe) << probe.error().message;
    EXPECT_GE(probe->bursts, 2u);
    EXPECT_GT(probe->bytes_per_s, 0.0);
    // Three experts of gate, up and down slabs each over two bursts: 1.5 experts, 4.5 slab reads per burst.
    EXPECT_EQ(reads % 3, 0u);
    EXPECT_GE(probe->mean_burst_reads, 3.0);
    EXPECT_LE(probe->mean_burst_reads, 6.0);
    pattern.reads[2].expert = 999;
    auto bad = run_sync<result<pattern_probe_result>>([&]() -> boost::asio::awaitable<result<pattern_probe_result>> {
        auto reader = io::make_reader(co_await boost::asio::this_coro::executor);
        if (!reader) {
            co_return reader.error();
        }
        co_return co_await probe_read_pattern(**reader, m.files, m.layout, pattern, std::chrono::milliseconds{50});
    });
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("expert 999 of layer 1"), std::string::npos) << bad.error().message;
}

TEST(learned_read_share, follows_the_curve_of_the_donor_with_the_same_geometry) {
    std::string_view source;
    EXPECT_NEAR(learned_read_share(128, 8, 0.25, &source), 0.5066, 1e-9);
    EXPECT_NE(source.find("qwen3-30b-a3b"), std::string_view::npos);
    EXPECT_NEAR(learned_read_share(128, 8, 0.275), (0.5066 + 0.4320) / 2, 1e-9);
    EXPECT_NEAR(learned_read_share(128, 4, 0.5, &source), 0.1506, 1e-9);
    EXPECT_NE(source.find("gpt-oss-120b"), std::string_view::npos);
    learned_read_share(256, 8, 0.5, &source);
    EXPECT_NE(source.find("qwen3.5-35b-a3b"), std::string_view::npos);
}

TEST(learned_read_share, runs_from_every_choice_read_to_nothing_read) {
    EXPECT_DOUBLE_EQ(learned_read_share(128, 8, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(learned_read_share(128, 8, 1.0), 0.0);
    double last = learned_read_share(128, 8, 0.05);
    for (double share = 0.06; share < 1.0; share += 0.01) {
        const double v = learned_read_share(128, 8, share);
        EXPECT_LE(v, last) << "at " << share;
        EXPECT_GE(v, 0.0);
        last = v;
    }
}

TEST(learned_read_share, a_geometry_without_a_recording_takes_the_nearest_ratio) {
    std::string_view source;
    learned_read_share(512, 10, 0.1, &source); // top-10 of 512: 2%, nearest to top-8 of 256 (3.1%)
    EXPECT_NE(source.find("qwen3.5-35b-a3b"), std::string_view::npos);
    learned_read_share(64, 8, 0.1, &source); // 12.5%: nearest to top-8 of 128 (6.25%)
    EXPECT_NE(source.find("qwen3-30b-a3b"), std::string_view::npos);
}

} // namespace
} // namespace sluice
