// Tensor data through io::reader: whole tensors, byte ranges and expert slabs, on both reader backends.
#include "runtime/gguf/tensor_io.hpp"
#include "runtime/gguf/writer.hpp"
#include "tests/gguf/test_util.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

namespace sluice::gguf {
namespace {

using kernels::quant_type;
using testing::random_bytes;
using testing::scratch_dir;

class gguf_tensor_io : public ::testing::TestWithParam<io::backend> {};

TEST_P(gguf_tensor_io, tensors_ranges_and_expert_slabs_read_back_what_was_written) {
    scratch_dir dir;
    std::vector<std::vector<std::byte>> data;
    {
        writer w(dir / "m.gguf", {.alignment = 4096, .max_part_tensors = 2});
        ASSERT_TRUE(w.add_tensor("token_embd.weight", quant_type::q8_0, {256, 9}));
        ASSERT_TRUE(w.add_tensor("blk.0.ffn_up_exps.weight", quant_type::q4_k, {512, 3, 8}));
        ASSERT_TRUE(w.add_tensor("output.weight", quant_type::f16, {100, 7}));
        for (std::uint32_t i = 0; i < 3; ++i) {
            data.push_back(random_bytes(w.next_tensor()->bytes, i + 10));
            ASSERT_TRUE(w.write_tensor(data.back()));
        }
        ASSERT_TRUE(w.finish());
    }
    auto model = model_files::open(dir / "m-00001-of-00002.gguf");
    ASSERT_TRUE(model) << model.error().message;

    boost::asio::io_context ctx;
    auto reader = io::make_reader(ctx.get_executor(), {.force = GetParam()});
    if (!reader && GetParam() == io::backend::io_uring) {
        GTEST_SKIP() << "io_uring unavailable: " << reader.error().message;
    }
    ASSERT_TRUE(reader) << reader.error().message;
    bool done = false;
    boost::asio::co_spawn(
        ctx,
        [&]() -> boost::asio::awaitable<void> {
            for (std::size_t i = 0; i < 3; ++i) {
                const auto& t = model->tensors()[i];
                std::vector<std::byte> buf(t.bytes);
                auto r = co_await read_tensor(**reader, *model, t, buf);
                EXPECT_TRUE(r) << r.error().message;
                EXPECT_EQ(buf, data[i]) << t.name;
            }
            const auto& experts = model->tensors()[1];
            std::vector<std::byte> slab(experts.expert_stride());
            auto r = co_await read_expert(**reader, *model, experts, 5, slab);
            EXPECT_TRUE(r) << r.error().message;
            const auto begin = data[1].begin() + static_cast<std::ptrdiff_t>(5 * experts.expert_stride());
            EXPECT_TRUE(std::equal(slab.begin(), slab.end(), begin));

            std::vector<std::byte> tail(10);
            auto range = co_await read_tensor_range(**reader, *model, model->tensors()[2], 1390, tail);
            EXPECT_TRUE(range) << range.error().message;
            EXPECT_TRUE(std::equal(tail.begin(), tail.end(), data[2].begin() + 1390));
            auto outside = co_await read_tensor_range(**reader, *model, model->tensors()[2], 1395, tail);
            EXPECT_FALSE(outside);
            auto wrong_size = co_await read_tensor(**reader, *model, model->tensors()[2], tail);
            EXPECT_FALSE(wrong_size);
            done = true;
        },
        boost::asio::detached);
    ctx.run();
    EXPECT_TRUE(done);
    EXPECT_EQ(model->tensors()[2].split, 1U);
}

INSTANTIATE_TEST_SUITE_P(backends, gguf_tensor_io, ::testing::Values(io::backend::pread, io::backend::io_uring));

} // namespace
} // namespace sluice::gguf
