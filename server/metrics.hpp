// The server's Prometheus metrics: atomic counters and gauges, fixed-bucket histograms, and their rendering
// in the text exposition format 0.0.4 (GET /metrics). No external library.
#pragma once

#include "runtime/experts/expert_cache.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::server {

/// Content-Type of the text exposition format.
inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4";

/// A histogram with fixed upper bounds (seconds); +Inf is implicit. Thread-safe.
class histogram {
public:
    explicit histogram(std::vector<double> bounds);
    void observe(double value) noexcept;
    /// Appends `name`_bucket/_sum/_count sample lines (cumulative buckets, ending with le="+Inf").
    void render(std::string& out, std::string_view name) const;

private:
    std::vector<double> bounds_;
    std::vector<std::atomic<std::uint64_t>> counts_; ///< per bucket, not cumulative; last is +Inf
    std::atomic<double> sum_{0.0};
    std::atomic<std::uint64_t> count_{0};
};

/// Every metric of one server. Thread-safe; in practice used from the io_context's thread.
class server_metrics {
public:
    server_metrics();

    /// Counts one answered request (`route` from a fixed set, so label values stay few).
    void count_request(std::string_view route, unsigned status);
    std::atomic<std::int64_t> in_flight{0};
    std::atomic<std::uint64_t> prompt_tokens{0};
    std::atomic<std::uint64_t> generated_tokens{0};
    histogram time_to_first_token;
    histogram inter_token_latency;

    /// Values read from the server's state at scrape time.
    struct sampled {
        std::uint64_t queued = 0;
        std::uint64_t kv_cache_tokens = 0;
        std::uint64_t model_resident_bytes = 0;
        std::uint64_t memory_budget_bytes = 0; ///< the memory plan's budget (0 while loading)
        bool streams_experts = false;          ///< the plan's strategy
        /// The expert cache's counters (all zero, one entry per layer, when the model is resident; no layers
        /// while loading).
        experts::expert_cache_counters experts;
        /// Speculative decoding (runtime/engine/speculative.hpp counters, copied).
        struct speculation_counts {
            std::uint64_t verify_steps = 0, drafted = 0, accepted = 0, verify_tokens = 0, verify_expert_reads = 0;
            std::uint64_t plain_tokens = 0, plain_expert_reads = 0;
        } speculation;
        /// Continuous batching (runtime/engine/batch_engine.hpp counters, copied).
        struct batch_counts {
            std::uint64_t steps = 0, tokens = 0, sequence_rows = 0, prefill_steps = 0, prefill_tokens = 0;
            double step_s = 0, expert_wait_s = 0, gather_s = 0;
            double prefill_queue_s = 0, prefill_step_s = 0, prefill_expert_wait_s = 0;
        } batch;
    };
    /// The whole exposition text.
    [[nodiscard]] std::string render(const sampled& now) const;

private:
    mutable std::mutex requests_mutex_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
};

/// Times the tokens of one generation: the first against `start` (time to first token), the next ones
/// against the previous token (inter-token latency).
class token_clock {
public:
    using clock = std::chrono::steady_clock;
    token_clock(server_metrics& m, clock::time_point start) : metrics_(&m), last_(start) {}
    void on_token();

private:
    server_metrics* metrics_;
    clock::time_point last_;
    bool first_ = true;
};

/// The status of the last response written on a connection (keyed by its stream's address), so the request
/// loop can count it after the handler returns. Set by write_response and the SSE writer.
void note_response_status(const void* connection, unsigned status);
/// Takes (and forgets) the noted status; 0 when none was written.
unsigned take_response_status(const void* connection);

} // namespace sluice::server
