// Compute pool: jobs hold an atomic task counter; workers claim tasks lock-free and the last one to finish
// posts the completion to the awaiting coroutine's executor.
#include "runtime/compute/compute_pool.hpp"

#include <algorithm>
#include <cassert>
#include <immintrin.h>

namespace sluice::runtime {

struct compute_pool::job {
    task_ref task;
    std::size_t n_tasks = 0;
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> remaining{0};
    std::function<void()> on_done; // runs once, on the worker that finishes the last task (may be empty)
    std::atomic<bool> done{false};  // set after on_done; run_blocking waits on it
};

namespace {
constexpr int spin_rounds = 2000; // tens of microseconds of pause before sleeping: the io thread may need the core
} // namespace

compute_pool::compute_pool(std::size_t n_threads) {
    if (n_threads == static_cast<std::size_t>(-1)) {
        n_threads = std::max(1u, std::thread::hardware_concurrency());
    }
    for (std::size_t i = 0; i < n_threads; ++i) {
        workers_.emplace_back([this] { worker_loop(); });
    }
}

compute_pool::~compute_pool() {
    stop_.store(true);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (auto& t : workers_) {
        t.join();
    }
}

void compute_pool::submit(std::size_t n_tasks, task_ref task, std::function<void()> done) {
    assert(!workers_.empty() && "awaited jobs need at least one worker");
    if (n_tasks == 0) {
        done();
        return;
    }
    auto j = std::make_shared<job>();
    j->task = task;
    j->n_tasks = n_tasks;
    j->remaining.store(n_tasks);
    j->on_done = std::move(done);
    enqueue(std::move(j));
}

void compute_pool::run_blocking_ref(std::size_t n_tasks, task_ref task) {
    if (n_tasks == 0) {
        return;
    }
    auto j = std::make_shared<job>();
    j->task = task;
    j->n_tasks = n_tasks;
    j->remaining.store(n_tasks);
    enqueue(j);
    // The calling thread works on its own job too, then waits for tasks other workers still hold.
    for (std::size_t i = j->next.fetch_add(1); i < n_tasks; i = j->next.fetch_add(1)) {
        finish_task(j, i);
    }
    for (int spin = 0; !j->done.load(std::memory_order_acquire) && spin < spin_rounds; ++spin) {
        _mm_pause();
    }
    j->done.wait(false, std::memory_order_acquire); // our reference keeps the job (and its flag) alive
}

void compute_pool::enqueue(std::shared_ptr<job> j) {
    {
        std::lock_guard lock(jobs_mutex_);
        jobs_.push_back(std::move(j));
    }
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
}

void compute_pool::finish_task(const std::shared_ptr<job>& j, std::size_t task) {
    j->task.invoke(j->task.fn, task);
    if (j->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        {
            std::lock_guard lock(jobs_mutex_);
            jobs_.erase(std::find(jobs_.begin(), jobs_.end(), j));
        }
        if (j->on_done) {
            j->on_done();
        }
        j->done.store(true, std::memory_order_release);
        j->done.notify_all();
    }
}

// Claims and runs tasks of the oldest job that has some left; false when no job has tasks left.
bool compute_pool::work_once() {
    std::shared_ptr<job> j;
    {
        std::lock_guard lock(jobs_mutex_);
        for (const auto& candidate : jobs_) {
            if (candidate->next.load(std::memory_order_relaxed) < candidate->n_tasks) {
                j = candidate;
                break;
            }
        }
    }
    if (!j) {
        return false;
    }
    for (std::size_t i = j->next.fetch_add(1); i < j->n_tasks; i = j->next.fetch_add(1)) {
        finish_task(j, i);
    }
    return true;
}

void compute_pool::worker_loop() {
    std::uint64_t seen = 0;
    while (true) {
        std::uint64_t now = generation_.load(std::memory_order_acquire);
        for (int spin = 0; now == seen && spin < spin_rounds; ++spin) {
            _mm_pause();
            now = generation_.load(std::memory_order_acquire);
        }
        if (now == seen) {
            generation_.wait(seen, std::memory_order_acquire);
            continue;
        }
        seen = now;
        if (stop_.load()) {
            return;
        }
        while (work_once()) {
        }
    }
}

} // namespace sluice::runtime
