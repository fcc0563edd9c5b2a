// The prompt cache of models with recurrent layers (Qwen3.5): a recurrent state cannot be cut back to an arbitrary
// prefix, so a session keeps state checkpoints (end of prompt, end of generation, every checkpoint_interval tokens
// of a prefill) and the next turn of a conversation resumes from the latest one on its prefix. Turn 2 reports
// cached tokens covering turn 1 and generates exactly what a cold session generates.
#include "runtime/engine/memory_plan.hpp"
#include "runtime/engine/session.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace sluice {
namespace {

using test::run_sync;

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> out(n);
    for (auto& t : out) {
        t = static_cast<std::int32_t>(rng() % 500);
    }
    return out;
}

std::shared_ptr<model> load(std::uint32_t checkpoints, std::uint32_t interval) {
    model_options o;
    o.n_batch = 16;
    o.n_ctx = 256;
    o.n_threads = 2;
    o.state_checkpoints = checkpoints;
    o.checkpoint_interval = interval;
    const auto path = test::tiny_model("qwen35moe", kernels::quant_type::q8_0);
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    if (!m) {
        throw std::runtime_error(m.error().message);
    }
    return *m;
}

struct turn {
    std::vector<std::int32_t> tokens;
    std::vector<float> logprobs;
    generation_summary summary;
};

turn run_turn(session& s, std::vector<std::int32_t> prompt, std::uint32_t n) {
    generate_request req;
    req.prompt_tokens = std::move(prompt);
    req.sampling.temperature = 0.0f;
    req.max_tokens = n;
    req.ignore_eos = true;
    auto stream = s.generate(std::move(req));
    turn out;
    run_sync<int>([&]() -> boost::asio::awaitable<int> {
        while (true) {
            auto ev = co_await stream.next();
            if (!ev || !*ev) {
                EXPECT_TRUE(ev) << ev.error().message;
                co_return 0;
            }
            if ((*ev)->token >= 0) {
                out.logprobs.push_back((*ev)->logprob);
            }
        }
    });
    out.tokens = stream.tokens();
    out.summary = stream.summary();
    return out;
}

/// Turn 2's prompt: turn 1's prompt, its answer, and a new message.
std::vector<std::int32_t> second_prompt(const std::vector<std::int32_t>& p1, const turn& t1) {
    auto p2 = p1;
    p2.insert(p2.end(), t1.tokens.begin(), t1.tokens.end());
    const auto more = random_tokens(11, 9);
    p2.insert(p2.end(), more.begin(), more.end());
    return p2;
}

TEST(hybrid_prompt_cache, second_turn_reuses_the_first_and_matches_a_cold_run) {
    const auto m = load(4, 512);
    const auto p1 = random_tokens(37, 1);
    session warm(m);
    const auto t1 = run_turn(warm, p1, 8);
    ASSERT_EQ(t1.tokens.size(), 8u);
    EXPECT_EQ(t1.summary.cached_tokens, 0u);
    const auto p2 = second_prompt(p1, t1);
    const auto t2 = run_turn(warm, p2, 8);
    // Everything turn 1 left in the cache: its prompt and all but its last token (sampled, never fed back).
    EXPECT_EQ(t2.summary.cached_tokens, p1.size() + t1.tokens.size() - 1);
    session cold(m);
    const auto c2 = run_turn(cold, p2, 8);
    EXPECT_EQ(c2.summary.cached_tokens, 0u);
    EXPECT_EQ(t2.tokens, c2.tokens);
    EXPECT_EQ(t2.logprobs, c2.logprobs); // bit-identical: the restored state is the state
}

TEST(hybrid_prompt_cache, a_prompt_diverging_inside_a_prefill_resumes_from_an_interval_checkpoint) {
    const auto m = load(8, 16);
    const auto p1 = random_tokens(70, 2);
    session warm(m);
    run_turn(warm, p1, 2);
    const auto positions = warm.checkpoint_positions();
    EXPECT_NE(std::find(positions.begin(), positions.end(), 48u), positions.end()) << "a checkpoint every 16";
    // Same first 53 tokens, then different: the latest checkpoint on the shared prefix is at 48.
    auto p2 = p1;
    p2.resize(53);
    const auto tail = random_tokens(20, 3);
    p2.insert(p2.end(), tail.begin(), tail.end());
    const auto t2 = run_turn(warm, p2, 6);
    EXPECT_EQ(t2.summary.cached_tokens, 48u);
    session cold(m);
    const auto c2 = run_turn(cold, p2, 6);
    EXPECT_EQ(t2.tokens, c2.tokens);
    EXPECT_EQ(t2.logprobs, c2.logprobs);
}

TEST(hybrid_prompt_cache, without_checkpoints_only_a_prompt_extending_the_whole_history_reuses_it) {
    const auto m = load(0, 512);
    const auto p1 = random_tokens(30, 4);
    session s(m);
    const auto t1 = run_turn(s, p1, 5);
    // The live state is the state at the end of the history: a prompt that extends all of it continues from there.
    const auto p2 = second_prompt(p1, t1);
    const auto t2 = run_turn(s, p2, 5);
    EXPECT_EQ(t2.summary.cached_tokens, p1.size() + t1.tokens.size() - 1);
    EXPECT_TRUE(s.checkpoint_positions().empty());
    // A prompt that leaves the history earlier has no saved state to go back to: it prefills from scratch.
    auto p3 = p1;
    p3.resize(20);
    const auto tail = random_tokens(12, 5);
    p3.insert(p3.end(), tail.begin(), tail.end());
    const auto t3 = run_turn(s, p3, 5);
    EXPECT_EQ(t3.summary.cached_tokens, 0u);
    session cold(m);
    const auto c3 = run_turn(cold, p3, 5);
    EXPECT_EQ(t3.tokens, c3.tokens);
    EXPECT_EQ(t3.logprobs, c3.logprobs);
}

TEST(hybrid_prompt_cache, the_plan_counts_recurrent_state_and_checkpoints_per_sequence) {
    model_options o;
    o.n_ctx = 128;
    o.n_threads = 1;
    o.n_seq = 3;
    o.state_checkpoints = 2;
    const auto path = test::tiny_model("qwen35moe", kernels::quant_type::q8_0);
    auto m = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path, o); });
    ASSERT_TRUE(m) << m.error().message;
    const auto& hp = (*m)->hparams();
    const auto recurrent = std::count(hp.hybrid.recurrent.begin(), hp.hybrid.recurrent.end(), true);
    const std::uint64_t state = static_cast<std::uint64_t>(recurrent) * hp.hybrid.state_floats() * sizeof(float);
    const auto& plan = (*m)->plan();
    EXPECT_EQ(plan.state_bytes, state);
    EXPECT_EQ(plan.checkpoint_bytes, state * 2 * 3);
    // The KV part: the attention layers' rows for 128 positions (F16) plus each sequence's state.
    const std::uint64_t attention_layers = hp.n_layer - static_cast<std::uint64_t>(recurrent);
    EXPECT_EQ(plan.kv_bytes, 3 * (attention_layers * 128 * (hp.kv_dim() + hp.v_dim()) * 2 + state));
    const auto json = to_json(plan);
    EXPECT_EQ(json.at("state_bytes_per_sequence").to_number<std::uint64_t>(), state);
    EXPECT_EQ(json.at("checkpoint_bytes").to_number<std::uint64_t>(), state * 6);
}

} // namespace
} // namespace sluice
