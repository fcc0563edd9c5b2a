// A pool of compute threads that splits numbered tasks (row ranges) across workers; awaited from coroutines.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::runtime {

/// Runs fn(task) for task in [0, n_tasks) on a fixed set of worker threads. Tasks are claimed with one
/// atomic increment each, so splitting a matrix into per-thread row ranges costs no lock per row. Idle
/// workers spin briefly, then sleep on an atomic (futex) until the next job. Thread-safe: any number of
/// jobs may be in flight; workers finish the oldest first.
class compute_pool {
public:
    /// Starts `n_threads` workers (default: one per hardware thread). Zero workers is allowed for pools
    /// used only through run_blocking(), where the calling thread does all the work.
    explicit compute_pool(std::size_t n_threads = static_cast<std::size_t>(-1));
    /// Joins the workers. Jobs still in flight must have completed.
    ~compute_pool();
    compute_pool(const compute_pool&) = delete;
    compute_pool& operator=(const compute_pool&) = delete;

    /// Number of worker threads.
    std::size_t size() const noexcept { return workers_.size(); }

    /// Runs fn(i) for every i in [0, n_tasks) on the workers and resumes the awaiting coroutine on its own
    /// executor when all have returned. The io_context thread never runs tasks and never blocks.
    /// `fn` must not throw; it stays alive in the coroutine frame until completion.
    template <typename Fn>
    boost::asio::awaitable<void> run(std::size_t n_tasks, Fn fn) {
        co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>, void()>(
            [this, n_tasks, &fn](auto handler) {
                // The last worker to finish posts the resumption to the coroutine's own executor. A work guard,
                // released only after the post has returned, keeps the io_context from running out of work
                // (and being destroyed) while that worker is still inside the post.
                auto ex = boost::asio::get_associated_executor(handler);
                auto h = std::make_shared<decltype(handler)>(std::move(handler));
                auto work = std::make_shared<boost::asio::executor_work_guard<decltype(ex)>>(ex);
                submit(n_tasks, task_ref{&fn, &call<Fn>}, [ex, h, work] {
                    boost::asio::post(ex, [h] { std::move (*h)(); });
                    work->reset();
                });
            },
            boost::asio::use_awaitable);
    }

    /// Blocking form for threads that are not io_context threads (tools, benchmarks, tests). The calling
    /// thread runs tasks alongside the workers, so a pool of n-1 workers gives n threads of compute.
    template <typename Fn>
    void run_blocking(std::size_t n_tasks, Fn fn) {
        run_blocking_ref(n_tasks, task_ref{&fn, &call<Fn>});
    }

private:
    struct task_ref {
        void* fn;
        void (*invoke)(void* fn, std::size_t task);
    };
    struct job;

    template <typename Fn>
    static void call(void* fn, std::size_t task) {
        (*static_cast<Fn*>(fn))(task);
    }

    void submit(std::size_t n_tasks, task_ref task, std::function<void()> done);
    void run_blocking_ref(std::size_t n_tasks, task_ref task);
    void enqueue(std::shared_ptr<job> j);
    void worker_loop();
    bool work_once();
    void finish_task(const std::shared_ptr<job>& j, std::size_t task);

    std::vector<std::thread> workers_;
    std::mutex jobs_mutex_; // guards jobs_: taken once per job and per worker wake-up, never per task
    std::vector<std::shared_ptr<job>> jobs_;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<bool> stop_{false};
};

} // namespace sluice::runtime
