// gpt-oss at the engine: files with broken window keys, sinks or MXFP4 blocks are refused naming the key or
// tensor; a windowed layer keeps a ring of window + batch rows, which the planner counts and the session's prompt
// reuse respects (a ring shorter than the context takes no state checkpoint back); a later turn that reuses the
// ring gives the tokens a fresh session gives.
#include "runtime/engine/session.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/mkmodel/random_model.hpp"
#include "runtime/models/kv_cache.hpp"
#include "tests/engine/tiny_model.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace sluice {
namespace {

using kernels::quant_type;
using test::run_sync;
using test::tiny_model;

std::string load_error(const std::filesystem::path& path) {
    auto r = run_sync<result<std::shared_ptr<model>>>([&] { return model::load(path); });
    return r ? std::string() : r.error().message;
}

mkmodel::random_model_plan& plan_of(void* p) { return *static_cast<mkmodel::random_model_plan*>(p); }

TEST(gpt_oss_load, missing_zero_or_per_layer_window_keys_are_named) {
    const auto missing = tiny_model("gpt-oss", quant_type::q8_0, 1, "-nowindow",
                                    [](void* p) { plan_of(p).kv.erase("gpt-oss.attention.sliding_window"); });
    EXPECT_NE(load_error(missing).find("gpt-oss.attention.sliding_window"), std::string::npos) << load_error(missing);
    const auto zero = tiny_model("gpt-oss", quant_type::q8_0, 1, "-zerowindow",
                                 [](void* p) { plan_of(p).kv.set_u32("gpt-oss.attention.sliding_window", 0); });
    EXPECT_NE(load_error(zero).find("gpt-oss.attention.sliding_window: must be positive"), std::string::npos)
        << load_error(zero);
    const auto pattern = tiny_model("gpt-oss", quant_type::q8_0, 1, "-pattern", [](void* p) {
        plan_of(p).kv.set_string("gpt-oss.attention.sliding_window_pattern", "every other");
    });
    EXPECT_NE(load_error(pattern).find("gpt-oss.attention.sliding_window_pattern"), std::string::npos)
        << load_error(pattern);
}

TEST(gpt_oss_load, sinks_of_the_wrong_length_are_named) {
    const auto path = tiny_model("gpt-oss", quant_type::q8_0, 1, "-sinks", [](void* p) {
        for (auto& t : plan_of(p).tensors) {
            if (t.spec.name == "blk.1.attn_sinks.weight") {
                t.spec.ne = {5};
            }
        }
    });
    EXPECT_NE(load_error(path).find("tensor blk.1.attn_sinks.weight: shape [5], expected [4]"), std::string::npos)
        << load_error(path);
}

// A file whose MXFP4 expert rows are not whole 32-value blocks (its header patched from 256 to 240 values).
TEST(gpt_oss_load, mxfp4_rows_that_are_not_whole_blocks_are_named) {
    const auto good = tiny_model("gpt-oss", quant_type::mxfp4);
    const auto bad = std::filesystem::path(good).replace_extension(".rows240.gguf");
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    std::string head(1 << 20, '\0');
    f.read(head.data(), static_cast<std::streamsize>(head.size()));
    const std::string name = "blk.0.ffn_up_exps.weight";
    const auto at = head.find(name);
    ASSERT_NE(at, std::string::npos);
    // After the name: n_dims (u32), then ne[0] (u64).
    const std::size_t ne0 = at + name.size() + 4;
    std::uint64_t cols = 0;
    std::memcpy(&cols, head.data() + ne0, 8);
    ASSERT_EQ(cols, 256u);
    cols = 240;
    f.seekp(static_cast<std::streamoff>(ne0));
    f.write(reinterpret_cast<const char*>(&cols), 8);
    f.close();
    const auto e = load_error(bad);
    EXPECT_NE(e.find(name), std::string::npos) << e;
    EXPECT_NE(e.find("not a multiple of the mxfp4 block size 32"), std::string::npos) << e;
}

TEST(gpt_oss_cache, windowed_layers_keep_a_ring_of_window_plus_batch_rows_and_the_plan_counts_it) {
    const auto m = test::load_model(tiny_model("gpt-oss", quant_type::q8_0), 16, 256, 2);
    const auto layout = models::cache_layout_of(m->arch(), m->hparams());
    ASSERT_EQ(layout.size(), 2u);
    EXPECT_EQ(layout[0].window, 16u); // layer 0 windowed, layer 1 full, as gpt-oss alternates
    EXPECT_EQ(layout[1].window, 0u);
    models::kv_cache cache(layout, 256, quant_type::f16, 16);
    EXPECT_EQ(cache.rows(0), 31u);
    EXPECT_EQ(cache.rows(1), 256u);
    EXPECT_EQ(cache.max_append(), 16u);
    const std::uint64_t row_bytes = 2u * m->hparams().kv_dim() * 2;
    EXPECT_EQ(m->plan().kv_bytes, (31u + 256u) * row_bytes);
    EXPECT_EQ(models::cache_bytes(layout, 256, quant_type::f16, 16), (31u + 256u) * row_bytes);
}

TEST(gpt_oss_cache, a_ring_goes_back_only_while_it_holds_the_window_before_the_new_end) {
    const std::vector<models::layer_cache_spec> layout{{8, 8, 4, 0}, {8, 8, 0, 0}};
    models::kv_cache cache(layout, 100, quant_type::f16, 3); // ring of 4 + 3 - 1 = 6 rows
    EXPECT_EQ(cache.rows(0), 6u);
    EXPECT_EQ(cache.max_append(), 3u);
    cache.advance(20); // the ring holds positions 14..19
    EXPECT_TRUE(cache.can_truncate(20));
    EXPECT_TRUE(cache.can_truncate(0));
    EXPECT_TRUE(cache.can_truncate(17));  // position 17 sees 14..16: held
    EXPECT_FALSE(cache.can_truncate(16)); // position 16 sees 13..15: 13 is gone
    EXPECT_FALSE(cache.can_truncate(21));
    models::kv_cache young(layout, 100, quant_type::f16, 3);
    young.advance(5); // nothing overwritten yet: any prefix
    EXPECT_TRUE(young.can_truncate(1));
}

TEST(gpt_oss_cache, a_ring_shorter_than_the_context_refuses_state_restores_and_a_state_refuses_truncation) {
    const std::vector<models::layer_cache_spec> windowed{{8, 8, 4, 0}, {8, 8, 0, 0}};
    models::kv_cache ring(windowed, 100, quant_type::f16, 3);
    EXPECT_FALSE(ring.has_state());
    EXPECT_FALSE(ring.can_restore()); // its old rows get overwritten: a checkpoint could not bring them back
    models::kv_cache whole(windowed, 5, quant_type::f16, 3); // 4 + 3 - 1 rows cover all 5 positions
    EXPECT_EQ(whole.rows(0), 5u);
    EXPECT_TRUE(whole.can_restore());
    EXPECT_EQ(whole.max_append(), 5u);
    const std::vector<models::layer_cache_spec> hybrid{{0, 0, 0, 16}, {8, 8, 0, 0}};
    models::kv_cache state(hybrid, 100, quant_type::f16, 3);
    EXPECT_TRUE(state.has_state());
    EXPECT_TRUE(state.can_restore());
    state.advance(10);
    EXPECT_FALSE(state.can_truncate(5)); // the state at 5 is only in a checkpoint
    EXPECT_TRUE(state.can_truncate(0));
    state.restore(5, std::vector<float>(16, 1.0f));
    EXPECT_EQ(state.size(), 5u);
    EXPECT_EQ(state.state(0)[15], 1.0f);
}

struct outcome {
    std::vector<std::int32_t> tokens;
    generation_summary summary;
};

outcome generate(session& s, const std::vector<std::int32_t>& prompt, std::uint32_t n) {
    generate_request req;
    req.prompt_tokens = prompt;
    req.sampling.temperature = 0.0f;
    req.max_tokens = n;
    req.ignore_eos = true;
    return run_sync<outcome>([&]() -> boost::asio::awaitable<outcome> {
        auto stream = s.generate(std::move(req));
        while (true) {
            auto ev = co_await stream.next();
            EXPECT_TRUE(ev) << ev.error().message;
            if (!ev || !*ev) {
                break;
            }
        }
        co_return outcome{stream.tokens(), stream.summary()};
    });
}

std::vector<std::int32_t> tokens(std::size_t n, std::uint32_t seed) {
    std::vector<std::int32_t> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<std::int32_t>((i * 37 + seed * 101) % 500 + 3);
    }
    return out;
}

// A second turn reuses the first (past the window: the ring has wrapped) and decodes what a fresh session decodes;
// a turn that goes back further than the ring holds starts over, with the same result.
TEST(gpt_oss_cache, later_turns_reuse_the_ring_or_start_over_and_match_a_fresh_session) {
    const auto m = test::load_model(tiny_model("gpt-oss", quant_type::q8_0), 16, 256, 2);
    session s(m);
    const auto first_prompt = tokens(40, 1);
    const auto first = generate(s, first_prompt, 4);
    ASSERT_EQ(first.tokens.size(), 4u);
    auto second_prompt = first_prompt;
    second_prompt.insert(second_prompt.end(), first.tokens.begin(), first.tokens.end());
    const auto more = tokens(5, 2);
    second_prompt.insert(second_prompt.end(), more.begin(), more.end());
    const auto second = generate(s, second_prompt, 6);
    EXPECT_GE(second.summary.cached_tokens, 40u);
    session fresh(m);
    EXPECT_EQ(second.tokens, generate(fresh, second_prompt, 6).tokens);

    auto back_prompt = first_prompt;
    back_prompt.resize(12);
    back_prompt.insert(back_prompt.end(), more.begin(), more.end());
    const auto back = generate(s, back_prompt, 6);
    EXPECT_EQ(back.summary.cached_tokens, 0u); // the ring no longer holds what position 12 sees
    session fresh2(m);
    EXPECT_EQ(back.tokens, generate(fresh2, back_prompt, 6).tokens);
}

} // namespace
} // namespace sluice
