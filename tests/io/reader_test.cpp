// Reader correctness on both backends: aligned/unaligned reads, batches deeper than the ring, concurrency,
// and an io_context that keeps running while reads are in flight.
#include "io/dma_buffer.hpp"
#include "reader_fixture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <random>

namespace sluice::io::test {
namespace {

namespace asio = boost::asio;

TEST_P(reader_test, aligned_random_reads_match_reference) {
    EXPECT_EQ(reader_->backend_name(), kind() == backend::io_uring ? "io_uring" : "pread");
    EXPECT_EQ(file_.direct(), mode() == open_mode::direct_if_supported);
    const bool ok = run_to_end(ctx_, [&]() -> asio::awaitable<bool> {
        std::mt19937_64 rng(7);
        for (int i = 0; i < 64; ++i) {
            const std::size_t blocks = 1 + rng() % 64;
            const std::uint64_t offset = (rng() % (file_size / 4096 - blocks)) * 4096;
            dma_buffer buf(blocks * 4096);
            auto r = co_await reader_->read_at(file_, offset, buf.span());
            if (!r) {
                ADD_FAILURE() << r.error().message;
                co_return false;
            }
            if (!matches(offset, buf.span())) {
                ADD_FAILURE() << "mismatch at offset " << offset;
                co_return false;
            }
        }
        co_return true;
    }());
    EXPECT_TRUE(ok);
    EXPECT_EQ(reader_->counters().reads, 64u);
}

TEST_P(reader_test, unaligned_random_reads_match_reference) {
    const bool ok = run_to_end(ctx_, [&]() -> asio::awaitable<bool> {
        std::mt19937_64 rng(8);
        std::vector<std::byte> storage(300'001);
        for (int i = 0; i < 100; ++i) {
            const std::size_t size = 1 + rng() % 300'000;
            const std::uint64_t offset = rng() % (file_size - size);
            std::span<std::byte> dest(storage.data() + 1, size); // misaligned address too
            auto r = co_await reader_->read_at(file_, offset, dest);
            if (!r || !matches(offset, dest)) {
                ADD_FAILURE() << "offset " << offset << " size " << size << ": "
                              << (r ? "mismatch" : r.error().message);
                co_return false;
            }
        }
        co_return true;
    }());
    EXPECT_TRUE(ok);
}

TEST_P(reader_test, read_ending_at_unaligned_end_of_file_succeeds) {
    std::vector<std::byte> dest(5000);
    const std::uint64_t offset = file_size - dest.size();
    auto r = run_to_end(ctx_, reader_->read_at(file_, offset, dest));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(matches(offset, dest));
}

TEST_P(reader_test, zero_length_read_succeeds) {
    auto r = run_to_end(ctx_, reader_->read_at(file_, file_size + 100, {}));
    EXPECT_TRUE(r);
}

TEST_P(reader_test, batch_larger_than_queue_depth_matches_reference) {
    auto small = make(8);
    ASSERT_TRUE(small) << small.error().message;
    std::mt19937_64 rng(9);
    std::vector<dma_buffer> buffers;
    std::vector<read_request> requests;
    for (int i = 0; i < 300; ++i) {
        const std::size_t size = 1 + rng() % 65536;
        const bool aligned = i % 2 == 0;
        const std::uint64_t offset = aligned ? (rng() % (file_size / 4096 - 17)) * 4096 : rng() % (file_size - size);
        buffers.emplace_back(size);
        requests.push_back({&file_, offset, buffers.back().span().first(aligned ? buffers.back().size() : size)});
    }
    auto results = run_to_end(ctx_, (*small)->read_batch(requests));
    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
        ASSERT_TRUE(results[i]) << i << ": " << results[i].error().message;
        ASSERT_TRUE(matches(requests[i].offset, requests[i].dest)) << "request " << i;
    }
    EXPECT_EQ((*small)->counters().reads, 300u);
}

TEST_P(reader_test, empty_batch_completes) {
    auto results = run_to_end(ctx_, reader_->read_batch({}));
    EXPECT_TRUE(results.empty());
}

TEST_P(reader_test, many_coroutines_read_concurrently) {
    int finished = 0;
    int failures = 0;
    for (int c = 0; c < 32; ++c) {
        asio::co_spawn(
            ctx_,
            [&, c]() -> asio::awaitable<void> {
                std::mt19937_64 rng(100 + c);
                std::vector<std::byte> dest(70'000);
                for (int i = 0; i < 8; ++i) {
                    const std::size_t size = 1 + rng() % dest.size();
                    const std::uint64_t offset = rng() % (file_size - size);
                    auto r = co_await reader_->read_at(file_, offset, std::span(dest).first(size));
                    failures += (!r || !matches(offset, std::span(dest).first(size))) ? 1 : 0;
                }
                ++finished;
            },
            asio::detached);
    }
    ctx_.run();
    EXPECT_EQ(finished, 32);
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(reader_->counters().reads, 32u * 8u);
}

// Responsiveness is a property of O_DIRECT reads: buffered reads of a cached file are memory copies that io_uring
// performs inside submit, so this suite runs on O_DIRECT files only.
class direct_reader_test : public reader_test {};

TEST_P(direct_reader_test, io_context_keeps_running_while_a_large_batch_is_in_flight) {
    // 96 MiB of 1 MiB O_DIRECT reads: long enough that a blocked io_context thread would miss every tick.
    std::vector<dma_buffer> buffers;
    std::vector<read_request> requests;
    std::mt19937_64 rng(11);
    for (int i = 0; i < 96; ++i) {
        buffers.emplace_back(1 << 20);
        requests.push_back({&file_, (rng() % 7) * (1 << 20), buffers.back().span()});
    }
    bool in_flight = true;
    int ticks_during_batch = 0;
    asio::steady_timer timer(ctx_);
    asio::co_spawn(
        ctx_,
        [&]() -> asio::awaitable<void> {
            while (in_flight) {
                timer.expires_after(std::chrono::microseconds(200));
                co_await timer.async_wait(asio::use_awaitable);
                ticks_during_batch += in_flight ? 1 : 0;
            }
        },
        asio::detached);
    const auto started = std::chrono::steady_clock::now();
    auto results = run_to_end(ctx_, [&]() -> asio::awaitable<std::vector<result<void>>> {
        auto out = co_await reader_->read_batch(requests);
        in_flight = false;
        co_return out;
    }());
    const auto took = std::chrono::steady_clock::now() - started;
    for (const auto& r : results) {
        ASSERT_TRUE(r) << r.error().message;
    }
    EXPECT_GE(ticks_during_batch, 2) << "batch took "
                                     << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

INSTANTIATE_TEST_SUITE_P(backends, reader_test,
                         ::testing::Combine(::testing::Values(backend::io_uring, backend::pread),
                                            ::testing::Values(open_mode::direct_if_supported, open_mode::buffered)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(backends, direct_reader_test,
                         ::testing::Combine(::testing::Values(backend::io_uring, backend::pread),
                                            ::testing::Values(open_mode::direct_if_supported)),
                         param_name);

} // namespace
} // namespace sluice::io::test
