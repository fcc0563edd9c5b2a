// The memory plan: given a budget, what stays resident (dense weights, KV cache, buffers) and how many routed
// experts the expert cache holds; the bytes a token is expected to read and the speed the disk allows.
#pragma once

#include "io/reader.hpp"
#include "kernels/quant_type.hpp"
#include "runtime/experts/expert_layout.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/models/hparams.hpp"
#include "runtime/models/kv_cache.hpp"
#include "sluice/error.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

namespace sluice {

/// Parses a byte size: a plain number of bytes, or a number (decimals allowed) with a unit: K, M, G, T or
/// KiB, MiB, GiB, TiB (powers of 1024), KB, MB, GB, TB (powers of 1000); case-insensitive, optional space.
/// Errors name the text ("memory budget \"4 XB\": unknown unit \"XB\"").
result<std::uint64_t> parse_size(std::string_view text);

/// The default budget when none is given: a safe share of MemAvailable (/proc/meminfo).
std::uint64_t default_memory_budget();

/// What the plan is computed for.
struct plan_inputs {
    std::uint64_t budget = 0;   ///< bytes; 0 = default_memory_budget()
    std::uint32_t n_ctx = 4096; ///< context per sequence
    std::uint32_t n_seq = 1;    ///< sequences with a KV cache each (the server's parallel slots)
    std::uint32_t n_batch = 256;
    std::size_t n_threads = 1;
    kernels::quant_type kv_type = kernels::quant_type::f16;
    double disk_bandwidth = 0; ///< bytes/s for the speed bound; 0 = unknown
    /// What each layer keeps per sequence (architecture cache_layout_of); empty: standard attention layers.
    std::vector<models::layer_cache_spec> cache_layout;
    /// Recurrent-state checkpoints each sequence keeps for its prompt cache (models with recurrent layers).
    std::uint32_t state_checkpoints = 0;
};

/// How a model is held in memory.
struct memory_plan {
    enum class strategy_kind { resident, stream_experts };
    strategy_kind strategy = strategy_kind::resident;
    std::uint64_t budget = 0;
    std::uint64_t dense_bytes = 0;      ///< every non-expert weight (held resident in both strategies)
    std::uint64_t expert_bytes = 0;     ///< all routed-expert weights in the file
    std::uint64_t kv_bytes = 0;         ///< KV cache of n_seq sequences of n_ctx tokens (recurrent states included)
    std::uint64_t state_bytes = 0;      ///< of which one sequence's recurrent state (models with recurrent layers)
    std::uint64_t checkpoint_bytes = 0; ///< the prompt cache's state checkpoints of all n_seq sequences
    std::uint64_t compute_bytes = 0;    ///< forward-pass buffers and fixed overhead
    std::uint64_t draft_bytes = 0;      ///< a draft model's whole plan (weights, KV caches, buffers); 0 without one
    std::uint64_t mtp_bytes = 0;        ///< MTP drafting (plan_mtp_bytes); 0 when it does not run
    /// resident: dense + expert bytes; stream_experts: dense bytes (the cache is counted apart).
    std::uint64_t resident_bytes = 0;
    std::uint64_t cache_bytes = 0;               ///< expert cache (slots * slot_bytes); 0 when resident
    std::uint64_t cache_slots = 0;               ///< experts the cache holds
    std::uint64_t slot_bytes = 0;                ///< one slot (expert_layout::slot_bytes)
    std::uint64_t total_experts = 0;             ///< routed experts over all layers
    std::uint64_t read_bytes_per_token_cold = 0; ///< an empty cache: every chosen expert of every layer read
    /// Expected with the cache under learned routing: the curve of the routing donor nearest the model's geometry
    /// (learned_read_share, named by `routing_curve`), prefetch reads included.
    std::uint64_t read_bytes_per_token = 0;
    std::uint64_t read_bytes_per_token_uniform = 0; ///< the same assuming uniform routing, for comparison
    std::string_view routing_curve;                 ///< the recording whose curve read_bytes_per_token follows
    double disk_bandwidth = 0;                      ///< bytes/s used for the bound (0: unknown)
    double tokens_per_s_bound = 0;                  ///< disk_bandwidth / read_bytes_per_token (0: unknown/none)

    [[nodiscard]] bool streams() const noexcept { return strategy == strategy_kind::stream_experts; }
    /// The total the plan holds: resident + cache + KV + compute + draft + MTP bytes (never above the budget).
    [[nodiscard]] std::uint64_t planned_bytes() const noexcept;
};

/// Plans `files` (hyperparameters `hp`, experts `layout`) into `in.budget`. Everything is resident when the
/// whole model fits; otherwise the experts stream through a cache of the bytes left. Error (with the numbers)
/// when the resident part, KV cache, buffers and the smallest workable cache do not fit.
result<memory_plan> plan_memory(const gguf::model_files& files, const models::model_hparams& hp,
                                const experts::expert_layout& layout, const plan_inputs& in);

/// What drafting with the model's MTP block adds to its plan (model_options::mtp): the block's routed experts, held
/// resident (its other tensors are in dense_bytes already), and per sequence the block's one-layer cache, the hidden
/// states the target's and the block's caches keep (n_ctx rows of n_embd floats each) and the block's forward-pass
/// buffers (without the process's fixed overhead and tokenizer tables, which the model's plan counts once). 0 when
/// `hp` has no MTP block.
std::uint64_t plan_mtp_bytes(const gguf::model_files& files, const models::model_hparams& hp, const plan_inputs& in);

/// The plan as JSON (sizes in bytes, plus "strategy", "assumptions").
boost::json::object to_json(const memory_plan& plan);

/// Measures random-read bandwidth (bytes/s) on the model file: expert-sized O_DIRECT reads at high queue depth
/// for about `duration`. Errors: read failures, a model without routed experts.
boost::asio::awaitable<result<double>>
probe_disk_bandwidth(io::reader& reader, const gguf::model_files& files, const experts::expert_layout& layout,
                     std::chrono::milliseconds duration = std::chrono::milliseconds{300});

} // namespace sluice
