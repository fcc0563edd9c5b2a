// How the forward pass reaches routed-expert weights. A MoE layer asks for its chosen experts with `fetch`,
// which fills an expert_batch handle without waiting: what is in memory is ready at once, the rest arrives as
// reads end. Compute threads run the ready entries and release them; when only waiting ones remain, the step
// stalls and the runner awaits the batch on the io_context. The next layer's predicted experts are asked for
// with `prefetch` into a second handle, chained behind the current layer's compute. `resident_experts` serves
// weights already in memory; `expert_cache` streams them from disk.
#pragma once

#include "runtime/experts/expert_batch.hpp"
#include "runtime/models/weights.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::experts {

/// Source of routed-expert weights. Calls for one batch come from one thread at a time, but several forward
/// passes may share a source (each with its own batches): implementations are thread-safe.
class expert_source {
public:
    virtual ~expert_source() = default;

    /// Compute thread: starts a request for the distinct experts `ids` of `layer` in `batch` (fully released
    /// before). Entries in memory are ready on return; the others become ready (or failed) as their reads end.
    /// Ready entries stay in memory until released. Never blocks on a read.
    virtual void fetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) = 0;
    /// Compute thread: reads `ids` of `layer` ahead of need (a prediction) into `batch`, which tracks their
    /// arrival but holds nothing: a later fetch finds them in memory, or joins their reads. The default marks
    /// every entry ready (nothing to read).
    virtual void prefetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids);
    /// Compute thread: hands entry `i` back (ready, waiting or failed); a read in flight still completes.
    virtual void release(expert_batch& batch, std::size_t i) noexcept;
    /// Hands back every entry of `batch` not yet released.
    void release_all(expert_batch& batch) noexcept;
    /// Compute thread: hands back a prediction batch whose layer has come (or that a nearer prediction replaced):
    /// `release_all`, and a source may drop the reads of its experts that have not started and that nobody else
    /// wants (expert_cache in priority read order). A prediction handed back with plain `release` keeps its reads
    /// going (speculation's draft prefetch). The default is `release_all`.
    virtual void retire(expert_batch& batch) noexcept { release_all(batch); }

    /// Compute thread: `prefetch` for a prediction made `ahead` MoE layers before `layer` (1: the layer before,
    /// 2: two layers before), counted apart by depth. A source may give a prediction two layers ahead lower
    /// priority (expert_cache: no room is made for it while a fetch waits). The default is `prefetch`.
    virtual void prefetch_ahead(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids,
                                std::uint32_t ahead);

    /// Any thread: how many of `ids` (distinct experts of `layer`) are neither in memory nor being read, so that a
    /// fetch of them now would start that many reads. The default: 0 (every expert is in memory).
    [[nodiscard]] virtual std::size_t count_missing(std::uint32_t layer, std::span<const std::int32_t> ids) const {
        (void)layer;
        (void)ids;
        return 0;
    }

    /// Whether prefetch does anything (the forward pass computes predictions only then).
    [[nodiscard]] virtual bool wants_prediction() const noexcept { return false; }
    /// How many MoE layers ahead the forward pass should predict and prefetch: 0 (none), 1 (the next layer) or
    /// 2 (the next two). The default: 1 when prefetch does anything, else 0.
    [[nodiscard]] virtual std::uint32_t prediction_depth() const noexcept { return wants_prediction() ? 1 : 0; }
    /// A forward pass starts on `executor`: reads complete there. Called on that executor.
    virtual void attach(const boost::asio::any_io_executor& executor) { (void)executor; }
    /// The forward pass that called `attach` has ended (its io_context may go away once no pass is attached
    /// and no read is in flight). Called on the same executor.
    virtual void detach() noexcept {}
    /// `n` more tokens went through the model (for bytes per token).
    virtual void count_tokens(std::uint64_t n) noexcept { (void)n; }
};

/// Experts held in the model's resident weights: every entry is ready at once.
class resident_experts final : public expert_source {
public:
    explicit resident_experts(const models::model_weights& w) noexcept : weights_(&w) {}
    void fetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) override;

private:
    const models::model_weights* weights_;
};

} // namespace sluice::experts
