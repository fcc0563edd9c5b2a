// Team jobs on the compute pool: every worker runs one member of a job whose phases are separated by a
// spinning barrier, so a whole layer is one round trip between the io_context and the pool.
#pragma once

#include "runtime/compute/compute_pool.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <immintrin.h>
#include <thread>

namespace sluice::runtime {

/// A reusable barrier for the members of one team. Members spin (the phases between waits are short),
/// yielding the core after a while so an oversubscribed machine still makes progress.
class team_barrier {
public:
    explicit team_barrier(std::size_t n) noexcept : n_(n) {}

    /// Returns once all `n` members have called wait() for this phase.
    void wait() noexcept {
        const std::size_t phase = phase_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
            arrived_.store(0, std::memory_order_relaxed);
            phase_.store(phase + 1, std::memory_order_release);
            return;
        }
        for (unsigned spin = 0; phase_.load(std::memory_order_acquire) == phase; ++spin) {
            if (spin < 4096) {
                _mm_pause();
            } else {
                std::this_thread::yield();
            }
        }
    }

private:
    std::size_t n_;
    std::atomic<std::size_t> arrived_{0};
    std::atomic<std::size_t> phase_{0};
};

/// [begin, end) of member `t` of `n` when splitting `count` items evenly.
struct slice {
    std::size_t begin, end;
    slice(std::size_t count, std::size_t t, std::size_t n) noexcept : begin(count * t / n), end(count * (t + 1) / n) {}
    [[nodiscard]] std::size_t size() const noexcept { return end - begin; }
};

/// Runs fn(member, n_members, barrier) on every worker of `pool` at once and resumes the caller when all
/// have returned. Every member must call barrier.wait() the same number of times. Deadlock-free with other
/// team jobs on the same pool because workers take the oldest job's tasks first and a team never has more
/// members than the pool has workers.
template <typename Fn>
boost::asio::awaitable<void> run_team(compute_pool& pool, Fn fn) {
    const std::size_t n = pool.size();
    team_barrier barrier(n);
    co_await pool.run(n, [&](std::size_t t) { fn(t, n, barrier); });
}

/// Blocking form for non-io threads (tests, tools): the caller is one member besides the workers.
template <typename Fn>
void run_team_blocking(compute_pool& pool, Fn fn) {
    const std::size_t n = pool.size() + 1;
    team_barrier barrier(n);
    pool.run_blocking(n, [&](std::size_t t) { fn(t, n, barrier); });
}

} // namespace sluice::runtime
