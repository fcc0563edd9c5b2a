// Metric storage and the text exposition format 0.0.4.
#include "server/metrics.hpp"

#include <array>
#include <charconv>
#include <span>
#include <unordered_map>

namespace sluice::server {
namespace {

/// The shortest text that reads back as `v` (Prometheus parses it as a Go float).
std::string number(double v) {
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), r.ptr);
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void single(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            std::uint64_t value) {
    header(out, name, type, help);
    out += name;
    out += ' ';
    out += std::to_string(value);
    out += '\n';
}

/// The same for a value in seconds or a ratio.
void single(std::string& out, std::string_view name, std::string_view type, std::string_view help, double value) {
    header(out, name, type, help);
    out += name;
    out += ' ';
    out += number(value);
    out += '\n';
}

/// Latency buckets (seconds) from 1 ms to 60 s.
std::vector<double> latency_buckets() {
    return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

/// Appends `name`_bucket/_sum/_count lines from per-bucket (not cumulative) `counts`, one more than `bounds`
/// (the last is +Inf). _count is the +Inf bucket, so the two always agree even while other threads observe.
void render_buckets(std::string& out, std::string_view name, std::span<const double> bounds,
                    std::span<const std::uint64_t> counts, double sum) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        cumulative += counts[i];
        out += name;
        out += "_bucket{le=\"";
        out += i < bounds.size() ? number(bounds[i]) : std::string("+Inf");
        out += "\"} ";
        out += std::to_string(cumulative);
        out += '\n';
    }
    out += name;
    out += "_sum ";
    out += number(sum);
    out += '\n';
    out += name;
    out += "_count ";
    out += std::to_string(cumulative);
    out += '\n';
}

/// One counter per layer, labelled `layer`, of the expert cache's per-layer counters.
void per_layer(std::string& out, std::string_view name, std::string_view help,
               const std::vector<experts::expert_layer_counters>& layers,
               std::uint64_t experts::expert_layer_counters::*field) {
    header(out, name, "counter", help);
    for (std::size_t i = 0; i < layers.size(); ++i) {
        out += name;
        out += "{layer=\"";
        out += std::to_string(i);
        out += "\"} ";
        out += std::to_string(layers[i].*field);
        out += '\n';
    }
}

/// Expert streaming: the memory plan's budget, the expert cache and the disk reads behind it.
void render_streaming(std::string& out, const server_metrics::sampled& now) {
    const auto& c = now.experts;
    single(out, "sluice_memory_budget_bytes", "gauge",
           "Memory budget of the model's memory plan (weights, KV caches, buffers, expert cache).",
           now.memory_budget_bytes);
    single(out, "sluice_expert_streaming", "gauge",
           "1 when routed experts stream from disk through the expert cache, 0 when the model is resident.",
           std::uint64_t{now.streams_experts ? 1u : 0u});
    single(out, "sluice_expert_cache_slots", "gauge", "Experts the expert cache holds at most (0: resident model).",
           c.slots);
    single(out, "sluice_expert_cache_slots_filled", "gauge", "Expert cache slots holding an expert now.",
           c.slots_filled);
    single(out, "sluice_expert_cache_bytes", "gauge", "Bytes of the expert cache's slots.", c.slots * c.slot_bytes);
    per_layer(out, "sluice_expert_cache_hits_total",
              "Chosen experts found in the expert cache at their first lookup, by layer.", c.layers,
              &experts::expert_layer_counters::hits);
    per_layer(out, "sluice_expert_cache_misses_total",
              "Chosen experts not in the expert cache at their first lookup (read, or still being read), by layer.",
              c.layers, &experts::expert_layer_counters::misses);
    per_layer(out, "sluice_expert_cache_evictions_total",
              "Experts evicted from the expert cache to make room, by the evicted expert's layer.", c.layers,
              &experts::expert_layer_counters::evictions);
    single(out, "sluice_expert_prefetch_issued_total", "counter",
           "Experts of the next layer read ahead because the router predicted them.", c.prefetch_issued);
    single(out, "sluice_expert_prefetch_used_total", "counter",
           "Prefetched experts that were chosen before being evicted.", c.prefetch_used);
    single(out, "sluice_expert_prefetch_wasted_total", "counter", "Prefetched experts evicted without being chosen.",
           c.prefetch_wasted);
    single(out, "sluice_expert_prefetch_depth2_issued_total", "counter",
           "Of the experts read ahead, those predicted two layers ahead (--prefetch-depth 2).", c.prefetch2_issued);
    single(out, "sluice_expert_prefetch_depth2_used_total", "counter",
           "Experts read ahead two layers ahead that were chosen before being evicted.", c.prefetch2_used);
    single(out, "sluice_expert_prefetch_depth2_wasted_total", "counter",
           "Experts read ahead two layers ahead that were evicted without being chosen.", c.prefetch2_wasted);
    single(out, "sluice_expert_prefetch_dropped_total", "counter",
           "--read-order priority: predicted experts never read, their reads still queued when the prediction was "
           "let go of (its layer came, or a nearer prediction replaced it).",
           c.prefetch_dropped);
    single(out, "sluice_expert_prefetch_promoted_total", "counter",
           "--read-order priority: chosen experts whose queued prediction reads became demand reads.",
           c.prefetch_promoted);
    single(out, "sluice_disk_reads_deferred_total", "counter",
           "--read-order priority: expert reads held in the queue because --read-window reads were in flight.",
           c.reads_deferred);
    single(out, "sluice_disk_reads_dropped_total", "counter",
           "--read-order priority: expert slab reads taken out of the queue unsubmitted.", c.reads_dropped);
    single(out, "sluice_disk_demand_reads_total", "counter",
           "Expert slab reads a computing layer waited for (demand reads).", c.demand_reads);
    single(out, "sluice_disk_demand_reads_queued_behind_total", "counter",
           "Summed over demand reads: the expert reads already in flight when each was submitted.",
           c.demand_queued_behind);
    single(out, "sluice_disk_demand_read_seconds_total", "counter",
           "Summed over demand reads: seconds from being asked for to completion.", c.demand_latency_s);
    single(out, "sluice_disk_reads_total", "counter", "Expert slab reads from the model file completed.", c.reads);
    single(out, "sluice_disk_read_failures_total", "counter", "Expert slab reads from the model file that failed.",
           c.read_failures);
    single(out, "sluice_disk_read_bytes_total", "counter", "Bytes read from the model file for experts.", c.bytes_read);
    single(out, "sluice_disk_busy_seconds_total", "counter",
           "Seconds with at least one expert read in flight (bytes / busy seconds = read throughput).", c.busy_s);
    header(out, "sluice_disk_read_seconds", "histogram", "Latency of expert slab reads from the model file.");
    std::array<double, experts::expert_cache_counters::latency_bounds_us.size()> bounds{};
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        bounds[i] = experts::expert_cache_counters::latency_bounds_us[i] / 1e6;
    }
    render_buckets(out, "sluice_disk_read_seconds", bounds, c.latency_buckets, c.latency_sum_s);
}

/// Speculative decoding: what was drafted and accepted, and the expert reads behind each token with and without.
void render_speculation(std::string& out, const server_metrics::sampled& now) {
    const auto& c = now.speculation;
    single(out, "sluice_speculative_verify_steps_total", "counter",
           "Forward passes that verified drafted tokens (speculative decoding).", c.verify_steps);
    single(out, "sluice_speculative_drafted_tokens_total", "counter", "Tokens drafted and verified.", c.drafted);
    single(out, "sluice_speculative_accepted_tokens_total", "counter", "Drafted tokens the model accepted.",
           c.accepted);
    single(out, "sluice_speculative_tokens_total", "counter",
           "Tokens produced by verification passes (accepted drafts plus one per pass).", c.verify_tokens);
    single(out, "sluice_speculative_expert_reads_total", "counter",
           "Experts read from disk during verification passes (streamed experts).", c.verify_expert_reads);
    const auto ratio = [](std::uint64_t a, std::uint64_t b) { return b ? static_cast<double>(a) / b : 0.0; };
    single(out, "sluice_speculative_expert_reads_per_token", "gauge",
           "Experts read from disk per token produced by verification passes (streamed experts).",
           ratio(c.verify_expert_reads, c.verify_tokens));
    single(out, "sluice_decode_plain_tokens_total", "counter", "Tokens of one-token decode steps.", c.plain_tokens);
    single(out, "sluice_decode_plain_expert_reads_per_token", "gauge",
           "Experts read from disk per token of one-token decode steps (streamed experts).",
           ratio(c.plain_expert_reads, c.plain_tokens));
}

/// Continuous batching: steps, their width, and where their time went.
void render_batch(std::string& out, const server_metrics::sampled& now) {
    const auto& c = now.batch;
    single(out, "sluice_batch_steps_total", "counter", "Forward passes of the batch engine (one per step).", c.steps);
    single(out, "sluice_batch_tokens_total", "counter", "Tokens the batch engine's steps ran (prompt and decode).",
           c.tokens);
    single(out, "sluice_batch_sequence_rows_total", "counter",
           "Sum over steps of the sequences in the step (divided by steps: the mean width of a step).",
           c.sequence_rows);
    single(out, "sluice_batch_prefill_steps_total", "counter",
           "Prefill steps: new prompts run on their own, ahead of a step or between two layers of one.",
           c.prefill_steps);
    single(out, "sluice_batch_prefill_tokens_total", "counter", "Prompt tokens that prefill steps ran.",
           c.prefill_tokens);
    single(out, "sluice_batch_step_seconds_total", "counter", "Seconds the batch engine spent in forward passes.",
           c.step_s);
    single(out, "sluice_batch_expert_wait_seconds_total", "counter",
           "Of the forward passes' seconds, those stalled waiting for expert reads.", c.expert_wait_s);
    single(out, "sluice_batch_gather_seconds_total", "counter",
           "Seconds the batch engine waited before a step for the sequences of the last step to queue again.",
           c.gather_s);
    single(out, "sluice_batch_prefill_queue_seconds_total", "counter",
           "Summed over the prompts of prefill steps: seconds from queueing to the start of their step.",
           c.prefill_queue_s);
    single(out, "sluice_batch_prefill_step_seconds_total", "counter",
           "Seconds the batch engine spent in prefill steps.", c.prefill_step_s);
    single(out, "sluice_batch_prefill_expert_wait_seconds_total", "counter",
           "Of the prefill steps' seconds, those stalled waiting for expert reads.", c.prefill_expert_wait_s);
}

std::mutex statuses_mutex;
std::unordered_map<const void*, unsigned> statuses;

} // namespace

histogram::histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}

void histogram::observe(double value) noexcept {
    std::size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) {
        ++i;
    }
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
}

void histogram::render(std::string& out, std::string_view name) const {
    std::vector<std::uint64_t> counts(counts_.size());
    for (std::size_t i = 0; i < counts.size(); ++i) {
        counts[i] = counts_[i].load(std::memory_order_relaxed);
    }
    render_buckets(out, name, bounds_, counts, sum_.load(std::memory_order_relaxed));
}

server_metrics::server_metrics() : time_to_first_token(latency_buckets()), inter_token_latency(latency_buckets()) {}

void server_metrics::count_request(std::string_view route, unsigned status) {
    const std::lock_guard lock(requests_mutex_);
    ++requests_[{std::string(route), status}];
}

std::string server_metrics::render(const sampled& now) const {
    std::string out;
    header(out, "sluice_requests_total", "counter", "HTTP requests answered, by route and status code.");
    {
        const std::lock_guard lock(requests_mutex_);
        for (const auto& [key, n] : requests_) {
            out += "sluice_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
                   std::to_string(n) + "\n";
        }
    }
    header(out, "sluice_requests_in_flight", "gauge", "HTTP requests being handled (scrapes of /metrics excluded).");
    out += "sluice_requests_in_flight " + std::to_string(in_flight.load()) + "\n";
    single(out, "sluice_requests_queued", "gauge", "Completion requests waiting for a generation slot.", now.queued);
    single(out, "sluice_prompt_tokens_total", "counter",
           "Prompt tokens of generations that ran (tokens reused from the KV cache included).", prompt_tokens.load());
    single(out, "sluice_generated_tokens_total", "counter", "Tokens generated (completion tokens).",
           generated_tokens.load());
    header(out, "sluice_time_to_first_token_seconds", "histogram",
           "Seconds from a completion joining the slot queue (queueing included) to its first generated token.");
    time_to_first_token.render(out, "sluice_time_to_first_token_seconds");
    header(out, "sluice_inter_token_latency_seconds", "histogram",
           "Seconds between consecutive generated tokens of one generation.");
    inter_token_latency.render(out, "sluice_inter_token_latency_seconds");
    single(out, "sluice_kv_cache_tokens", "gauge", "Tokens held in the KV caches of all generation slots.",
           now.kv_cache_tokens);
    single(out, "sluice_model_resident_bytes", "gauge", "Bytes of model weights resident in memory.",
           now.model_resident_bytes);
    render_streaming(out, now);
    render_speculation(out, now);
    render_batch(out, now);
    return out;
}

void token_clock::on_token() {
    const auto now = clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    (first_ ? metrics_->time_to_first_token : metrics_->inter_token_latency).observe(seconds);
    first_ = false;
    last_ = now;
}

void note_response_status(const void* connection, unsigned status) {
    const std::lock_guard lock(statuses_mutex);
    statuses[connection] = status;
}

unsigned take_response_status(const void* connection) {
    const std::lock_guard lock(statuses_mutex);
    const auto it = statuses.find(connection);
    if (it == statuses.end()) {
        return 0;
    }
    const unsigned s = it->second;
    statuses.erase(it);
    return s;
}

} // namespace sluice::server
