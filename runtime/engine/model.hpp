// sluice::model: a loaded GGUF model (architecture, weights, tokenizer, chat template, compute threads),
// shared by every session that generates with it.
#pragma once

#include "io/reader.hpp"
#include "runtime/chat/chat_template.hpp"
#include "runtime/compute/compute_pool.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/experts/expert_cache.hpp"
#include "runtime/experts/expert_source.hpp"
#include "runtime/models/weights.hpp"
#include "runtime/tokenizer/tokenizer.hpp"
#include "sluice/error.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

namespace sluice {

/// How a model is loaded and run.
struct model_options {
    std::uint32_t n_ctx = 0;     ///< default context of its sessions; 0 = min(training context, 4096)
    std::size_t n_threads = 0;   ///< compute threads; 0 = one per hardware thread
    std::uint32_t n_batch = 256; ///< most tokens per forward step during prefill
    kernels::quant_type kv_type = kernels::quant_type::f16; ///< KV cache elements: f16, or f32 (exact)
    io::reader_options io;                                  ///< disk reader settings
    /// Bytes the model may hold in memory (weights, KV caches, buffers); 0 = default_memory_budget(). When the
    /// whole model does not fit, routed experts stream from disk through an expert cache (see memory_plan).
    std::uint64_t memory_budget = 0;
    std::uint32_t n_seq = 1;   ///< sequences generating at once (KV caches the plan reserves)
    double disk_bandwidth = 0; ///< bytes/s for the plan's speed bound; 0 = a short probe when streaming
    bool prefetch = true;      ///< streaming: predict and read the next layer's experts ahead
    experts::cache_policy cache_policy = experts::cache_policy::lru; ///< streaming: which expert to evict
};

/// Called while weights load: bytes read so far of the total. Runs on the loading coroutine's executor.
using load_progress = models::load_progress;

/// A model in memory. Created by `load`; immutable afterwards except for its compute pool, so any number of
/// sessions on one io_context may share it (see session). Not copyable; hold it by shared_ptr.
class model {
public:
    /// Opens `path` (a GGUF file or any part of a split model), checks the architecture, hyperparameters
    /// and tensor table, builds the tokenizer, and reads every weight through io/ (io_uring where
    /// available) on the calling coroutine's executor, reporting `progress`. Errors name the file and the
    /// tensor or key at fault ("tensor blk.3.ffn_up_exps.weight: missing").
    static boost::asio::awaitable<result<std::shared_ptr<model>>>
    load(std::filesystem::path path, model_options options = {}, load_progress progress = {});
    ~model();
    model(const model&) = delete;
    model& operator=(const model&) = delete;

    [[nodiscard]] const models::model_hparams& hparams() const noexcept { return hp_; }
    [[nodiscard]] const models::architecture& arch() const noexcept { return *arch_; }
    [[nodiscard]] const tokenizer::tokenizer& vocab() const noexcept { return *tokenizer_; }
    /// The model's chat template, when the file carries one.
    [[nodiscard]] const std::optional<chat::template_source>& chat_template() const noexcept { return template_; }
    [[nodiscard]] const model_options& options() const noexcept { return options_; }
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    /// Bytes of weights held in memory.
    [[nodiscard]] std::uint64_t resident_bytes() const noexcept { return weights_.resident_bytes(); }
    /// How the model is held in memory: resident, or with routed experts streamed through a cache.
    [[nodiscard]] const memory_plan& plan() const noexcept { return plan_; }
    /// The expert cache's counters; all zero (no slots) when the model is fully resident.
    [[nodiscard]] experts::expert_cache_counters expert_counters() const;

    // For sessions and the forward pass.
    [[nodiscard]] runtime::compute_pool& pool() noexcept { return *pool_; }
    [[nodiscard]] const models::model_weights& weights() const noexcept { return weights_; }
    [[nodiscard]] experts::expert_source& experts() noexcept { return *experts_; }

private:
    model() = default;

    std::filesystem::path path_;
    model_options options_;
    std::unique_ptr<gguf::model_files> files_;
    const models::architecture* arch_ = nullptr;
    models::model_hparams hp_;
    models::model_weights weights_;
    memory_plan plan_;
    std::optional<tokenizer::tokenizer> tokenizer_;
    std::optional<chat::template_source> template_;
    std::unique_ptr<runtime::compute_pool> pool_;
    std::unique_ptr<experts::expert_source> experts_;
    const experts::expert_cache* cache_ = nullptr; ///< experts_ when it is a cache
};

} // namespace sluice
