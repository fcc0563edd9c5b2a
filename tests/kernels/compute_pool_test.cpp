// Compute pool: every task runs once, completion resumes the coroutine on its io_context thread, and the
// io_context keeps serving other work while tasks run.
#include "runtime/compute/compute_pool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace sluice::runtime {
namespace {

namespace net = boost::asio;

TEST(compute_pool, awaited_tasks_each_run_once_and_resume_on_the_io_thread) {
    compute_pool pool(2);
    net::io_context io;
    std::vector<std::atomic<int>> hits(10000);
    std::thread::id resumed_on;
    int timer_fired_during_work = 0;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            for (int round = 0; round < 3; ++round) {
                co_await pool.run(hits.size(), [&](std::size_t i) {
                    hits[i].fetch_add(1);
                    if (i % 1000 == 0) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(2));
                    }
                });
            }
            resumed_on = std::this_thread::get_id();
        },
        net::detached);
    // A timer on the same io_context must fire while the pool works: the io thread is never blocked.
    net::steady_timer timer(io, std::chrono::milliseconds(1));
    timer.async_wait([&](auto) { ++timer_fired_during_work; });
    io.run();
    EXPECT_EQ(resumed_on, std::this_thread::get_id());
    EXPECT_EQ(timer_fired_during_work, 1);
    for (auto& h : hits) {
        ASSERT_EQ(h.load(), 3);
    }
}

TEST(compute_pool, concurrent_jobs_and_empty_jobs_complete) {
    compute_pool pool(3);
    net::io_context io;
    std::atomic<long> sum{0};
    int finished = 0;
    for (int c = 0; c < 8; ++c) {
        net::co_spawn(
            io,
            [&, c]() -> net::awaitable<void> {
                co_await pool.run(static_cast<std::size_t>(c * 100),
                                  [&](std::size_t i) { sum += static_cast<long>(i); });
                ++finished;
            },
            net::detached);
    }
    io.run();
    long expected = 0;
    for (long c = 0; c < 8; ++c) {
        expected += c * 100 * (c * 100 - 1) / 2;
    }
    EXPECT_EQ(finished, 8);
    EXPECT_EQ(sum.load(), expected);
}

TEST(compute_pool, blocking_run_from_a_plain_thread) {
    compute_pool pool;
    EXPECT_GE(pool.size(), 1u);
    std::vector<int> out(777, 0);
    for (int round = 0; round < 100; ++round) {
        pool.run_blocking(out.size(), [&](std::size_t i) { out[i] += 1; });
    }
    for (int v : out) {
        ASSERT_EQ(v, 100);
    }
}

} // namespace
} // namespace sluice::runtime
