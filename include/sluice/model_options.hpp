// How a model is loaded and run (public): context, threads, memory budget, streaming and disk settings.
#pragma once

#include "sluice/io_options.hpp"
#include "sluice/speculative.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace sluice {

/// Elements of the per-sequence key/value cache.
enum class kv_cache_type {
    f16, ///< half the memory; what generation uses
    f32, ///< exact keys and values (fidelity checks)
};

/// How a streaming expert cache picks the expert to evict.
enum class expert_cache_policy {
    lru,         ///< least recently used
    lfu,         ///< least often chosen by the router (counts halved as they grow, so old habits fade), then LRU
    lru2,        ///< LRU-2: the oldest second-to-last choice (one choice only: first, least recent first)
    layer_quota, ///< LRU within the layer holding the most slots over an equal per-layer share
    pin_hot,     ///< LRU that skips the hottest experts by live (ageing) counts: `cache_pin_percent` of the slots
    lru2_cycle,  ///< LRU-2 over the experts not chosen since their layer's last visit; when all were, the one whose
                 ///< layer comes back last (steps whose experts outnumber the slots keep most of them for the next)
};

/// The order in which a streaming expert cache hands its reads to the disk (docs/STREAMING.md, "Read order").
enum class expert_read_order {
    fifo,     ///< every read submitted as soon as it is asked for, in that order (demand misses queue behind
              ///< the predictions asked for before them)
    priority, ///< demand reads at once; predictions (next layer, then two layers ahead) held in a queue and
              ///< submitted only while fewer than a window of reads is in flight; a held prediction is dropped
              ///< when its forward pass lets go of it (its layer passed or a nearer prediction replaced it)
};

/// What one render (and one parse) of a template may use. A template that goes past a limit fails with a
/// "TemplateLimitError" naming the limit; the process is unaffected. The defaults leave every template in
/// ../shared/fixtures/chat-templates/ far inside them on long conversations (docs/SERVER.md lists them).
struct template_limits {
    /// Evaluation steps: one per expression node, statement, loop iteration and item a builtin walks.
    std::uint64_t max_steps = 20'000'000;
    /// Wall-clock time of one render (checked every few thousand steps).
    std::chrono::milliseconds max_time{10'000};
    /// Bytes of strings, list slots and dict entries rendering creates, counted cumulatively (what the
    /// render holds at once is at most this).
    std::uint64_t max_bytes = 512ull << 20;
    /// Bytes of any one string or list the template builds.
    std::size_t max_value_bytes = 64ull << 20;
    /// Bytes of the rendered text.
    std::size_t max_output_bytes = 64ull << 20;
    /// Nesting of evaluation, all constructs counted together (statements, expressions, macro calls), and the
    /// height of a parsed expression: bounds the C++ stack a template can use.
    unsigned max_depth = 400;
    /// Nesting of lists and dicts inside one another (also the depth of a printed namespace chain).
    unsigned max_nesting = 100;
};

/// How a model is loaded and run.
struct model_options {
    std::uint32_t n_ctx = 0;     ///< default context of its sessions; 0 = min(training context, 4096)
    std::size_t n_threads = 0;   ///< compute threads; 0 = one per hardware thread
    std::uint32_t n_batch = 256; ///< most tokens per forward step during prefill
    kv_cache_type kv_type = kv_cache_type::f16;
    io::reader_options io; ///< disk reader settings
    /// Bytes the model may hold in memory (weights, KV caches, buffers); 0 = 80% of MemAvailable. When the
    /// whole model does not fit, routed experts stream from disk through an expert cache.
    std::uint64_t memory_budget = 0;
    std::uint32_t n_seq = 1;   ///< sequences generating at once (caches the plan reserves)
    double disk_bandwidth = 0; ///< bytes/s for the plan's speed bound; 0 = a short probe when streaming
    bool prefetch = true;      ///< streaming: predict and read the next layer's experts ahead
    /// Streaming, with prefetch: 1 predicts the next MoE layer only; 2 also the layer after it, read in a second
    /// batch behind the next layer's (docs/STREAMING.md, "Prefetch").
    std::uint32_t prefetch_depth = 1;
    expert_cache_policy cache_policy = expert_cache_policy::lru; ///< streaming: which expert to evict
    expert_read_order read_order = expert_read_order::priority;  ///< streaming: the order reads reach the disk
    /// Streaming, `read_order` priority: reads in flight below which predictions are submitted (demand reads
    /// never wait for it); 0 = the default (experts::default_read_window: 8).
    std::uint32_t read_window = 0;
    std::uint32_t cache_pin_percent = 50; ///< streaming, pin_hot: share of the slots kept for the hottest experts
    /// What rendering the chat template may use per request (a model file is untrusted input).
    sluice::template_limits template_limits;
    /// Old behaviour: control-token text a user wrote in a message ("<|im_end|>") becomes a control token.
    /// By default it is encoded as text, so a user cannot forge turns.
    bool special_tokens_in_content = false;
    /// Models with recurrent layers (Qwen3.5): recurrent-state checkpoints each session keeps so that a later
    /// prompt sharing a prefix resumes from one (the memory plan reserves them per sequence).
    std::uint32_t state_checkpoints = 4;
    /// Models with recurrent layers: a long prefill takes a checkpoint every this many positions.
    std::uint32_t checkpoint_interval = 512;
    /// A draft model for speculative decoding (same vocabulary; empty: none). It is held resident inside
    /// memory_budget: its weights, KV caches and buffers are planned first and the target gets the rest.
    std::string draft_model;
    /// When the budget cannot hold the draft and the target: true loads the target alone (model::draft_warning()
    /// says why), false fails the load with the numbers.
    bool draft_optional = false;
    /// Loads the model's multi-token prediction (MTP / NextN) block for drafting (speculative_mode::mtp): its
    /// routed experts are held resident and each session keeps the hidden states it drafts from, all inside
    /// memory_budget (memory_plan::mtp_bytes). The load fails with a message when the file has no MTP block or
    /// the model has recurrent layers. Without it, a file's MTP block is loaded but never run.
    bool mtp = false;
    /// Speculation of generations that do not choose (generate_request::speculative): off, lookup, draft
    /// (needs draft_model) or mtp (needs mtp).
    speculative_mode speculative = speculative_mode::off;
    std::uint32_t draft_max = 8; ///< most tokens drafted per step (the step adapts below it)
    /// Streaming: before verifying drafts, read the experts each layer is predicted to choose for them (the
    /// routing of each drafted token's latest earlier occurrence; speculation::prefetch_draft_experts).
    bool draft_prefetch = true;
    bool draft_adaptive = true; ///< false: every step drafts draft_max tokens (speculative_params::adaptive)
};

/// Called while weights load: bytes read so far of the total. Runs on the loading coroutine's executor.
using load_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

} // namespace sluice
