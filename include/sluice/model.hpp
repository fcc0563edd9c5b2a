// sluice::model: a loaded GGUF model (architecture, weights, tokenizer, chat template, compute threads, and the
// expert cache when its routed experts stream from disk), shared by every session that generates with it.
#pragma once

#include "sluice/error.hpp"
#include "sluice/model_options.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

// Sluice's internal types the accessors below name; opaque to programs outside Sluice.
namespace sluice {
struct memory_plan;
namespace models {
struct model_hparams;
struct architecture;
class model_weights;
} // namespace models
namespace tokenizer {
class tokenizer;
}
namespace chat {
struct template_source;
class jinja_template;
} // namespace chat
namespace experts {
class expert_source;
struct expert_cache_counters;
class routing_log;
} // namespace experts
namespace runtime {
class compute_pool;
}
namespace grammar {
class token_trie;
}
namespace speculation {
struct counters;
class mtp_block;
}
} // namespace sluice

namespace sluice {

class batch_engine;

/// A model in memory. Created by `load`; immutable afterwards except for its compute pool and expert cache, so
/// any number of sessions on one io_context may share it (see session). Not copyable; hold it by shared_ptr.
class model {
public:
    /// Opens `path` (a GGUF file or any part of a split model), checks the architecture, hyperparameters and
    /// tensor table, builds the tokenizer, plans memory within `options.memory_budget` and reads every weight
    /// it keeps resident through io_uring (a pread pool where io_uring is unavailable) on the calling
    /// coroutine's executor, reporting `progress`. Errors name the file and the tensor or key at fault
    /// ("tensor blk.3.ffn_up_exps.weight: missing").
    static boost::asio::awaitable<result<std::shared_ptr<model>>>
    load(std::filesystem::path path, model_options options, load_progress progress = {});
    /// load() with default options. An overload rather than a default argument: GCC 12 mis-copies an aggregate
    /// prvalue (such as a defaulted `options = {}`) materialised in a calling coroutine's frame, so a model_options
    /// holding a std::string arrived with a pointer into the caller's frame ("free(): invalid pointer" at the end).
    /// Callers passing their own options pass a named object for the same reason.
    static boost::asio::awaitable<result<std::shared_ptr<model>>> load(std::filesystem::path path);
    ~model();
    model(const model&) = delete;
    model& operator=(const model&) = delete;

    [[nodiscard]] const model_options& options() const noexcept;
    [[nodiscard]] const std::filesystem::path& path() const noexcept;
    /// Bytes of weights held in memory.
    [[nodiscard]] std::uint64_t resident_bytes() const noexcept;
    /// Whether routed experts stream from disk through an expert cache (the budget could not hold them all).
    [[nodiscard]] bool streams_experts() const noexcept;
    /// The training context the file declares.
    [[nodiscard]] std::uint32_t training_context() const noexcept;
    /// Empty while the model's files are as they were at load; else what changed ("PATH: truncated from N to M
    /// bytes while the model streams from it"). A model held wholly in memory does not read its files again.
    [[nodiscard]] std::string file_fault() const;
    /// Tokens of the vocabulary.
    [[nodiscard]] std::uint32_t vocab_size() const noexcept;

    // Inside Sluice (server, tools, tests): the internal parts, whose types are declared in runtime/ headers
    // (include runtime/engine/model.hpp).
    [[nodiscard]] const models::model_hparams& hparams() const noexcept;
    [[nodiscard]] const models::architecture& arch() const noexcept;
    [[nodiscard]] const tokenizer::tokenizer& vocab() const noexcept;
    /// The model's chat template, when the file carries one.
    [[nodiscard]] const std::optional<chat::template_source>& chat_template() const noexcept;
    /// The chat template parsed once at load under options().template_limits (renders share it: rendering
    /// is const and thread-safe), or the parse error each chat request reports; null without a template.
    [[nodiscard]] const result<chat::jinja_template>* parsed_chat_template() const noexcept;
    /// The vocabulary as a byte trie for grammar-constrained sampling, built on first use (thread-safe).
    [[nodiscard]] std::shared_ptr<const grammar::token_trie> token_trie() const;
    /// How the model is held in memory: resident, or with routed experts streamed through a cache.
    [[nodiscard]] const memory_plan& plan() const noexcept;
    /// The expert cache's counters; all zero (no slots) when the model is fully resident.
    [[nodiscard]] experts::expert_cache_counters expert_counters() const;
    [[nodiscard]] runtime::compute_pool& pool() noexcept;
    [[nodiscard]] const models::model_weights& weights() const noexcept;
    [[nodiscard]] experts::expert_source& experts() noexcept;
    /// MoE models: writes every token's routing (chosen experts, their weights, the next layer's prediction) to
    /// `record_to`, and/or uses the recording `replay_from` instead of the router's choice (the router still runs;
    /// the recording must have this model's layers x experts x top-k); docs/ROUTING.md. Either path may be empty.
    /// Sessions created afterwards record or replay; call it before creating any. Errors: no routed experts, a
    /// recording of another geometry, a file that cannot be created, read or parsed (named with the field).
    result<void> set_routing(const std::string& record_to, const std::string& replay_from);
    /// The draft model loaded with options().draft_model (resident, same vocabulary, inside the budget: plan()
    /// counts it as draft_bytes); null without one, or when draft_optional dropped it (see draft_warning()).
    [[nodiscard]] const std::shared_ptr<model>& draft() const noexcept;
    /// Why the draft model was not loaded (draft_optional and a budget that cannot hold both); empty otherwise.
    [[nodiscard]] const std::string& draft_warning() const noexcept;
    /// The multi-token prediction block loaded with options().mtp (plan() counts it as mtp_bytes); null without.
    [[nodiscard]] speculation::mtp_block* mtp() const noexcept;
    /// Speculative decoding's counters over all sessions (thread-safe).
    [[nodiscard]] speculation::counters& speculation() const noexcept;
    /// The routing recorded or replayed (set_routing); nullptr when neither.
    [[nodiscard]] experts::routing_log* routing() noexcept;
    /// The batch engine every session on this model runs its forward passes through (created on first use, and
    /// again after set_routing): one step per forward pass for all sequences that wait.
    [[nodiscard]] std::shared_ptr<batch_engine> batch();

private:
    struct state;
    model();
    /// Loads options().draft_model for `target` (whose tokenizer is built) within `budget`, resident.
    static boost::asio::awaitable<result<std::shared_ptr<model>>> load_draft(const model& target,
                                                                             std::uint64_t budget);
    [[nodiscard]] bool cache_has_state() const;
    std::unique_ptr<state> state_;
};

} // namespace sluice
