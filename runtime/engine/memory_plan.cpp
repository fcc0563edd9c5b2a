// The memory planner: sizes of the resident part, KV cache and buffers, the expert cache that the rest of the
// budget buys, the disk traffic that implies, and a short random-read probe of the disk.
//
// compute_bytes (forward-pass buffers and fixed overhead) is an estimate that errs high:
//   once per model (the batch engine's forward_runner, whose steps hold every sequence's tokens, and its prefill
//   runner of min(n_batch, prefill_step_tokens) tokens for new prompts beside a step; see forward_scratch), with
//   n_batch the sum of both runners' batches and k = max(n_expert_used, 1):
//     floats: x, xn, tmp [n_batch][n_embd]; q, k, v [n_batch][q_dim | kv_dim | v_dim];
//             attn [n_batch][n_head * head_dim_v]; gate, up [n_batch * k][max(n_ff, n_ff_exp)];
//             moe_out [n_batch * k][n_embd]; router [n_batch][n_expert]; weights, ids, selections 4 x [n_batch * k];
//             shared-expert hidden 2 x [n_batch][n_ff_shexp]; MoE: the next layer's prediction [n_batch] x
//             (n_embd + n_expert + 2k) and its prepared router input;
//     prepared activations: 4 rows of n_embd, k rows of the widest hidden size, 1 row of n_ff_shexp, per token,
//             at the widest prepared row of any weight type in the file (never below F32);
//   per sequence, n_vocab x 28 bytes: the logits and the sampler's candidates, scratch and penalty tables, and the
//     step's row of gathered logits; MoE: n_ctx x n_layer x k 16-bit ids, each position's chosen experts (kept
//     when the experts stream);
//   per compute thread: the attention's score and value rows, (n_ctx + head_dim_v) floats;
//   MLA (deepseek2): its query, latent, per-head query, decompressed key/value and output rows per token, and per
//             thread the kernels' latent rows of a batch, one head's decompression matrices and the scores of every
//             head over the context;
//   fixed: 64 MiB (allocator slack, thread stacks, io rings, the server) + n_vocab x 128 bytes of tokenizer tables.
#include "runtime/engine/memory_plan.hpp"

#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/routing_curves.hpp"

#include "base/async_event.hpp"
#include "io/dma_buffer.hpp"
#include "kernels/matmul.hpp"
#include "runtime/models/tensor_names.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace sluice {
namespace {

constexpr std::uint64_t page = 4096;
constexpr std::uint64_t mib = 1024 * 1024;
constexpr std::uint64_t gib = 1024 * mib;

/// Fixed overhead of the runtime beside the model's own buffers (see the formula at the top).
constexpr std::uint64_t fixed_overhead = 64 * mib;
constexpr std::uint64_t tokenizer_bytes_per_token = 128;
/// Logits (4), sampler candidates (8), sorted scratch (4), penalty counts and positions (4 + 4).
constexpr std::uint64_t vocab_bytes_per_sequence = 24;

/// Share of MemAvailable the default budget takes (see default_memory_budget).
constexpr double default_share = 0.8;
/// The default budget when /proc/meminfo and sysconf both fail.
constexpr std::uint64_t fallback_budget = 4 * gib;

/// Reads taken at once by the disk probe (NVMe drives reach their random-read bandwidth around 32).
constexpr std::size_t probe_queue_depth = 32;
constexpr std::uint64_t probe_seed = 0x5eed'd15c;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) {
    return (n + to - 1) / to * to;
}

std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return std::string(s);
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

/// The multiplier of a size unit (lower case), or 0 when unknown.
std::uint64_t unit_scale(std::string_view unit) {
    constexpr std::uint64_t k2 = 1024, k10 = 1000;
    static constexpr std::pair<std::string_view, std::uint64_t> table[] = {
        {"", 1},
        {"b", 1},
        {"k", k2},
        {"kib", k2},
        {"m", k2 * k2},
        {"mib", k2 * k2},
        {"g", k2 * k2 * k2},
        {"gib", k2 * k2 * k2},
        {"t", k2 * k2 * k2 * k2},
        {"tib", k2 * k2 * k2 * k2},
        {"kb", k10},
        {"mb", k10 * k10},
        {"gb", k10 * k10 * k10},
        {"tb", k10 * k10 * k10 * k10},
    };
    for (const auto& [name, scale] : table) {
        if (unit == name) {
            return scale;
        }
    }
    return 0;
}

/// "1.20 GiB" / "2.53 MiB" / "512 KiB" / "100 B".
std::string human(std::uint64_t bytes) {
    char buf[64];
    const auto v = static_cast<double>(bytes);
    if (bytes >= gib) {
        std::snprintf(buf, sizeof buf, "%.2f GiB", v / static_cast<double>(gib));
    } else if (bytes >= mib) {
        std::snprintf(buf, sizeof buf, "%.2f MiB", v / static_cast<double>(mib));
    } else if (bytes >= 1024) {
        std::snprintf(buf, sizeof buf, "%.2f KiB", v / 1024.0);
    } else {
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    }
    return buf;
}

/// Bytes the caches of `in.n_seq` sequences hold (kv_cache: per layer its key/value rows, F16 or F32, and its
/// recurrent state).
std::uint64_t kv_bytes_of(const models::model_hparams& hp, const plan_inputs& in) {
    const auto layout = in.cache_layout.empty() ? models::attention_cache_layout(hp) : in.cache_layout;
    return models::cache_bytes(layout, in.n_ctx, in.kv_type, in.n_batch) * in.n_seq;
}

/// The widest prepared activation row of `cols` columns over every weight type in `files`.
std::uint64_t widest_prepared_row(const gguf::model_files& files, std::uint64_t cols) {
    const std::uint64_t padded = round_up(std::max<std::uint64_t>(cols, 1), 256);
    std::uint64_t bytes = padded * sizeof(float); // never below an F32 row: the formula errs high
    for (const auto& t : files.tensors()) {
        bytes = std::max<std::uint64_t>(bytes, kernels::prepared_row_bytes(t.type, padded));
    }
    return bytes;
}

/// Forward-pass buffers and, with `process`, the fixed overhead and tokenizer tables, which a process has once (the
/// formula is at the top of this file).
std::uint64_t compute_bytes_of(const gguf::model_files& files, const models::model_hparams& hp, const plan_inputs& in,
                               bool process = true) {
    // The step's runner and the prefill runner beside it: every buffer below is per token of a runner's batch.
    const std::uint64_t b = std::max(1u, in.n_batch) + std::min(std::max(1u, in.n_batch), prefill_step_tokens);
    const std::uint64_t k = std::max(1u, hp.n_expert_used);
    const std::uint64_t ff = std::max(hp.n_ff, hp.n_ff_exp);
    std::uint64_t floats = 3 * b * hp.n_embd;
    floats += b * (std::uint64_t{hp.q_dim()} + hp.kv_dim() + hp.v_dim());
    floats += b * hp.n_head * hp.head_dim_v;
    floats += 2 * b * k * ff;
    if (hp.is_moe()) {
        floats += b * k * hp.n_embd + b * hp.n_expert + 4 * b * k;
        floats += b * (hp.n_embd + hp.n_expert + 2 * k); // the next layer's prediction: its input, router, choice
    }
    floats += 2 * b * hp.n_ff_shexp;
    std::uint64_t mla_thread = 0;
    if (const auto& m = hp.mla; m.enabled()) { // forward_scratch::mla_step, and the MLA kernels' rows per thread
        const std::uint64_t h = hp.n_head, rope = hp.rope.n_rot;
        floats += b * (m.q_lora_rank + m.kv_lora_rank + rope + h * (m.nope_dim + rope + m.nope_dim + 2 * m.v_dim));
        mla_thread =
            (b * m.kv_lora_rank + std::uint64_t{m.nope_dim + m.v_dim} * m.kv_lora_rank + h * std::uint64_t{in.n_ctx}) *
            sizeof(float);
    }
    const std::uint64_t hidden = std::max({std::uint64_t{hp.n_head} * hp.head_dim_v, std::uint64_t{hp.n_ff}, ff});
    std::uint64_t act = 4 * widest_prepared_row(files, hp.n_embd) * b;
    act += widest_prepared_row(files, hidden) * b * k;
    act += widest_prepared_row(files, hp.n_ff_shexp) * b;
    if (hp.is_moe()) {
        act += widest_prepared_row(files, hp.n_embd) * b; // the prediction's prepared router input
    }
    const std::uint64_t scratch = floats * sizeof(float) + act;
    std::uint64_t per_seq = std::uint64_t{hp.n_vocab} * (vocab_bytes_per_sequence + sizeof(float));
    if (hp.is_moe()) {
        // A streamed sequence's cache keeps each position's chosen experts (n_layer x top-k 16-bit ids), what
        // speculation predicts drafted tokens' experts from (kv_cache::keep_routing). Counted resident too: whether
        // the plan streams is decided after these bytes.
        per_seq += std::uint64_t{in.n_ctx} * hp.n_layer * k * sizeof(std::int16_t);
    }
    const std::uint64_t per_thread = (std::uint64_t{in.n_ctx} + hp.head_dim_v) * sizeof(float) + mla_thread;
    const std::uint64_t once = process ? fixed_overhead + std::uint64_t{hp.n_vocab} * tokenizer_bytes_per_token : 0;
    return scratch + per_seq * in.n_seq + per_thread * std::max<std::size_t>(in.n_threads, 1) + once;
}

std::uint32_t moe_layers(const experts::expert_layout& layout) {
    return static_cast<std::uint32_t>(
        std::count_if(layout.layers.begin(), layout.layers.end(), [](const auto& l) { return l.n_expert > 0; }));
}

/// Experts per layer (the largest layer's count).
std::uint32_t experts_per_layer(const experts::expert_layout& layout) {
    std::uint32_t n = 0;
    for (const auto& l : layout.layers) {
        n = std::max(n, l.n_expert);
    }
    return n;
}

/// The disk traffic of a token and the speed bound it implies, for a plan whose cache is already sized.
void plan_traffic(memory_plan& p, const experts::expert_layout& layout, double disk_bandwidth) {
    const std::uint32_t layers = moe_layers(layout);
    p.read_bytes_per_token_cold = std::uint64_t{layers} * layout.expert_used * layout.read_bytes;
    p.disk_bandwidth = disk_bandwidth;
    if (!p.streams() || layers == 0) {
        p.read_bytes_per_token = 0;
        p.read_bytes_per_token_uniform = 0;
        p.tokens_per_s_bound = 0;
        return;
    }
    // Uniform routing: a layer's chosen expert is in the cache with probability slots_per_layer / n_expert.
    const double cold = static_cast<double>(p.read_bytes_per_token_cold);
    const double slots_per_layer = static_cast<double>(p.cache_slots) / layers;
    const double hit = std::min(1.0, slots_per_layer / std::max(1u, experts_per_layer(layout)));
    p.read_bytes_per_token_uniform = static_cast<std::uint64_t>(std::llround(cold * (1.0 - hit)));
    // Learned routing: the donors' measured curve at the cache's share of all experts.
    const double share =
        static_cast<double>(p.cache_slots) / std::max<double>(1.0, static_cast<double>(p.total_experts));
    const double learned = learned_read_share(experts_per_layer(layout), layout.expert_used, share, &p.routing_curve);
    p.read_bytes_per_token = static_cast<std::uint64_t>(std::llround(cold * learned));
    p.tokens_per_s_bound = disk_bandwidth > 0 && p.read_bytes_per_token > 0
                               ? disk_bandwidth / static_cast<double>(p.read_bytes_per_token)
                               : 0.0;
}

} // namespace

result<std::uint64_t> parse_size(std::string_view text) {
    const std::string s = trim(text);
    const std::string quoted = "\"" + std::string(text) + "\"";
    std::size_t i = 0;
    std::uint64_t whole = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        const auto d = static_cast<std::uint64_t>(s[i] - '0');
        if (whole > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
            return make_error(std::errc::value_too_large, quoted + ": too large");
        }
        whole = whole * 10 + d;
        ++i;
    }
    if (i == 0) {
        return make_error(std::errc::invalid_argument,
                          quoted + ": not a size (a number of bytes, or a number with a unit such as 4GiB or 512M)");
    }
    std::string fraction;
    if (i < s.size() && s[i] == '.') {
        ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
            fraction += s[i++];
        }
        if (fraction.empty()) {
            return make_error(std::errc::invalid_argument, quoted + ": no digits after the decimal point");
        }
    }
    const std::string unit = trim(std::string_view(s).substr(i));
    const std::uint64_t scale = unit_scale(lower(unit));
    if (scale == 0) {
        return make_error(std::errc::invalid_argument,
                          quoted + ": unknown unit \"" + unit +
                              "\" (units: K, M, G, T or KiB, MiB, GiB, TiB in powers of 1024; KB, MB, GB, TB in "
                              "powers of 1000)");
    }
    if (scale == 1 && !fraction.empty()) {
        return make_error(std::errc::invalid_argument, quoted + ": a byte count must be a whole number");
    }
    if (whole > std::numeric_limits<std::uint64_t>::max() / scale) {
        return make_error(std::errc::value_too_large, quoted + ": too large");
    }
    std::uint64_t bytes = whole * scale;
    if (!fraction.empty()) {
        const double f = std::stod("0." + fraction) * static_cast<double>(scale);
        const auto extra = static_cast<std::uint64_t>(std::llround(f));
        if (bytes > std::numeric_limits<std::uint64_t>::max() - extra) {
            return make_error(std::errc::value_too_large, quoted + ": too large");
        }
        bytes += extra;
    }
    return bytes;
}

std::uint64_t default_memory_budget() {
    // 80% of MemAvailable: the rest stays free for the page cache (model headers, the tokenizer's first read,
    // other programs' files) and for the OS, so that planning to the budget never pushes the machine into swap
    // or the OOM killer. MemAvailable (not MemFree) already counts reclaimable page cache as available.
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib) {
        std::getline(meminfo, unit);
        if (key == "MemAvailable:") {
            return static_cast<std::uint64_t>(static_cast<double>(kib) * 1024.0 * default_share);
        }
    }
    // No /proc: half the physical memory, or a fixed guess.
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) {
        return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2;
    }
    return fallback_budget;
}

std::uint64_t memory_plan::planned_bytes() const noexcept {
    return resident_bytes + cache_bytes + kv_bytes + checkpoint_bytes + compute_bytes + draft_bytes + mtp_bytes;
}

result<memory_plan> plan_memory(const gguf::model_files& files, const models::model_hparams& hp,
                                const experts::expert_layout& layout, const plan_inputs& in) {
    memory_plan p;
    p.budget = in.budget != 0 ? in.budget : default_memory_budget();
    for (const auto& t : files.tensors()) {
        if (!t.is_expert()) {
            p.dense_bytes += round_up(t.bytes, page); // each lands in its own 4 KiB-aligned arena block
        }
    }
    p.expert_bytes = layout.total_bytes;
    p.kv_bytes = kv_bytes_of(hp, in);
    for (const auto& spec : in.cache_layout) {
        p.state_bytes += spec.state_floats * sizeof(float);
    }
    p.checkpoint_bytes = p.state_bytes * in.state_checkpoints * in.n_seq;
    p.compute_bytes = compute_bytes_of(files, hp, in);
    p.slot_bytes = layout.slot_bytes;
    p.total_experts = layout.total_count;

    const std::uint64_t fixed = p.dense_bytes + p.kv_bytes + p.checkpoint_bytes + p.compute_bytes;
    if (p.budget >= fixed + p.expert_bytes) {
        p.strategy = memory_plan::strategy_kind::resident;
        p.resident_bytes = p.dense_bytes + p.expert_bytes;
        plan_traffic(p, layout, in.disk_bandwidth);
        return p;
    }
    // Stream: the smallest workable cache holds one layer's chosen experts being computed and the next layer's
    // being read.
    const std::uint64_t min_slots = std::min<std::uint64_t>(2 * std::uint64_t{layout.expert_used}, layout.total_count);
    const std::uint64_t min_cache = min_slots * layout.slot_bytes;
    if (layout.total_count == 0 || p.budget < fixed + min_cache) {
        std::string m = "memory budget " + human(p.budget) + " is too small for this model: dense weights " +
                        human(p.dense_bytes) + " + KV cache " + human(p.kv_bytes) +
                        (p.checkpoint_bytes ? " + state checkpoints " + human(p.checkpoint_bytes) : std::string()) +
                        " + buffers " + human(p.compute_bytes);
        if (layout.total_count == 0) {
            m += " = " + human(fixed) + " (a model without routed experts cannot stream)";
        } else {
            m += " + the smallest expert cache (" + std::to_string(min_slots) + " slots of " +
                 human(layout.slot_bytes) + ") " + human(min_cache) + " = " + human(fixed + min_cache);
        }
        m += "; a smaller context or fewer parallel sequences need less KV cache";
        return make_error(std::errc::not_enough_memory, std::move(m));
    }
    p.strategy = memory_plan::strategy_kind::stream_experts;
    p.resident_bytes = p.dense_bytes;
    p.cache_slots = std::min<std::uint64_t>((p.budget - fixed) / layout.slot_bytes, layout.total_count);
    p.cache_bytes = p.cache_slots * layout.slot_bytes;
    plan_traffic(p, layout, in.disk_bandwidth);
    return p;
}

std::uint64_t plan_mtp_bytes(const gguf::model_files& files, const models::model_hparams& hp, const plan_inputs& in) {
    if (hp.hybrid.nextn_layers == 0) {
        return 0;
    }
    std::uint64_t experts = 0;
    for (const auto& t : files.tensors()) {
        const auto parsed = models::parse_tensor_name(t.name);
        if (t.is_expert() && parsed && parsed->layer && *parsed->layer >= hp.n_layer) {
            experts += round_up(t.bytes, page);
        }
    }
    auto one = in;
    one.n_seq = 1;
    one.cache_layout.clear();
    auto block = hp;
    block.n_layer = 1; // the block's cache: one attention layer
    const std::uint64_t cache = kv_bytes_of(block, one);
    const std::uint64_t hidden = 2 * std::uint64_t{in.n_ctx} * hp.n_embd * sizeof(float);
    const std::uint64_t b = std::max(1u, in.n_batch);
    const std::uint64_t projection =
        b * (3 * std::uint64_t{hp.n_embd} * sizeof(float) + widest_prepared_row(files, 2 * std::uint64_t{hp.n_embd}));
    // Each sequence's block runs its own forward pass; the process's fixed overhead is the model's, counted once.
    const std::uint64_t buffers = compute_bytes_of(files, hp, one, false) + projection;
    return experts + (cache + hidden + buffers) * std::max(1u, in.n_seq);
}

boost::json::object to_json(const memory_plan& plan) {
    const bool bound_known = plan.streams() && plan.tokens_per_s_bound > 0;
    std::string basis;
    if (!plan.streams()) {
        basis = "none: the whole model is resident, nothing is read from disk per token";
    } else if (plan.read_bytes_per_token == 0) {
        basis = "none: the expert cache holds every expert";
    } else if (plan.disk_bandwidth <= 0) {
        basis = "unknown: no disk bandwidth was measured or given";
    } else {
        basis = "disk_bandwidth_bytes_per_s / read_bytes_per_token";
    }
    return boost::json::object{
        {"strategy", plan.streams() ? "stream_experts" : "resident"},
        {"budget_bytes", plan.budget},
        {"planned_bytes", plan.planned_bytes()},
        {"resident_bytes", plan.resident_bytes},
        {"dense_bytes", plan.dense_bytes},
        {"expert_bytes", plan.expert_bytes},
        {"kv_bytes", plan.kv_bytes},
        {"state_bytes_per_sequence", plan.state_bytes},
        {"checkpoint_bytes", plan.checkpoint_bytes},
        {"compute_bytes", plan.compute_bytes},
        {"draft_bytes", plan.draft_bytes},
        {"mtp_bytes", plan.mtp_bytes},
        {"cache_bytes", plan.cache_bytes},
        {"cache_slots", plan.cache_slots},
        {"slot_bytes", plan.slot_bytes},
        {"total_experts", plan.total_experts},
        {"read_bytes_per_token_cold", plan.read_bytes_per_token_cold},
        {"read_bytes_per_token", plan.read_bytes_per_token},
        {"read_bytes_per_token_uniform", plan.read_bytes_per_token_uniform},
        {"routing_curve", plan.routing_curve},
        {"disk_bandwidth_bytes_per_s", static_cast<std::uint64_t>(std::llround(std::max(plan.disk_bandwidth, 0.0)))},
        {"tokens_per_s_bound", bound_known ? boost::json::value(plan.tokens_per_s_bound) : boost::json::value(0.0)},
        {"bound_basis", basis},
        {"assumptions",
         "read_bytes_per_token assumes learned routing: the reads per token (misses and next-layer predictions read "
         "ahead, LRU-2) that routing_curve, a routing donor's recording of the nearest geometry, gave at this "
         "cache's share of all experts (docs/STREAMING.md); give a recording with --routing for your own workload. "
         "read_bytes_per_token_uniform assumes uniform routing: each layer's chosen experts are cached with "
         "probability (cache_slots / MoE layers) / experts per layer. "
         "tokens_per_s_bound counts disk reads only (compute ignored) for one sequence decoding. compute_bytes is "
         "an estimate that errs high."},
    };
}

namespace {

/// Shared by the probe's lanes; kept alive by them, so a cancelled caller never frees a buffer under a read.
struct probe_state {
    struct range {
        const io::file* f;
        std::uint64_t offset;
        std::uint64_t bytes;
    };
    std::vector<range> ranges; ///< candidate reads: every expert slab's aligned range inside its file
    std::uint64_t lane_bytes = 0;
    io::dma_buffer buffer;
    std::mt19937_64 rng{probe_seed};
    std::chrono::steady_clock::time_point deadline;
    std::uint64_t bytes_read = 0;
    std::size_t lanes_running = 0;
    std::optional<error> failure;
    std::unique_ptr<async_event> done; ///< set when the last lane ends
};

boost::asio::awaitable<void> probe_lane(io::reader& reader, std::shared_ptr<probe_state> st, std::size_t lane) {
    const std::span<std::byte> region(st->buffer.data() + lane * st->lane_bytes, st->lane_bytes);
    std::uniform_int_distribution<std::size_t> pick(0, st->ranges.size() - 1);
    do {
        const auto& r = st->ranges[pick(st->rng)];
        auto ok = co_await reader.read_at(*r.f, r.offset, region.first(r.bytes));
        if (!ok) {
            if (!st->failure) {
                st->failure = ok.error();
            }
            break;
        }
        st->bytes_read += r.bytes;
    } while (!st->failure && std::chrono::steady_clock::now() < st->deadline);
    if (--st->lanes_running == 0) {
        st->done->set();
    }
}

} // namespace

// Runs probe_queue_depth lanes on the reader's executor, each reading random slab ranges one after another until
// the deadline; the caller must await on that same executor (the reader's own contract), as the lanes and the
// caller share the counters without locks.
boost::asio::awaitable<result<double>> probe_disk_bandwidth(io::reader& reader, const gguf::model_files& files,
                                                            const experts::expert_layout& layout,
                                                            std::chrono::milliseconds duration) {
    auto st = std::make_shared<probe_state>();
    // Candidates: the aligned range of every expert's gate, up and down slab; a range running past the end of
    // its file (the last expert of the last tensor) is left out, as an O_DIRECT read there would come up short.
    const auto parts = files.parts();
    for (const auto& l : layout.layers) {
        for (const auto& s : l.slabs) {
            if (l.n_expert == 0 || s.bytes == 0 || s.split >= parts.size()) {
                continue;
            }
            const auto& f = parts[s.split].file;
            for (std::uint32_t e = 0; e < l.n_expert; ++e) {
                const std::uint64_t start = s.offset + e * s.bytes;
                const std::uint64_t lo = start & ~(page - 1);
                const std::uint64_t len = experts::expert_layout::aligned_extent(start, s.bytes);
                if (lo + len <= f.size()) {
                    st->ranges.push_back({&f, lo, len});
                    st->lane_bytes = std::max(st->lane_bytes, len);
                }
            }
        }
    }
    if (st->ranges.empty()) {
        co_return make_error(std::errc::invalid_argument, "disk probe: the model has no routed experts to read");
    }
    const std::size_t lanes = std::min(probe_queue_depth, st->ranges.size());
    st->buffer = io::dma_buffer(lanes * st->lane_bytes);
    st->buffer.advise_huge_pages();
    st->buffer.populate();
    auto ex = reader.get_executor();
    st->done = std::make_unique<async_event>(ex);
    const auto t0 = std::chrono::steady_clock::now();
    st->deadline = t0 + duration;
    st->lanes_running = lanes;
    for (std::size_t i = 0; i < lanes; ++i) {
        boost::asio::co_spawn(ex, probe_lane(reader, st, i), [](std::exception_ptr e) {
            if (e) {
                std::rethrow_exception(e);
            }
        });
    }
    while (st->lanes_running > 0) {
        co_await st->done->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st->failure) {
        co_return st->failure->with_context("disk probe");
    }
    co_return seconds > 0 ? static_cast<double>(st->bytes_read) / seconds : 0.0;
}

} // namespace sluice
