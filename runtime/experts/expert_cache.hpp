// The expert cache: streams routed experts from the model files into a fixed slot pool. It composes the slot
// pool (memory and index), a replacement policy (which slot to evict), the read scheduler (O_DIRECT slab reads
// through io_uring) and the expert_batch handles of the forward passes: a fetched expert stays pinned in its
// slot until its batch releases it; a read in flight is shared by every batch that wants the expert.
#pragma once

#include "runtime/experts/cache_counters.hpp"
#include "runtime/experts/expert_layout.hpp"
#include "runtime/experts/expert_source.hpp"
#include "runtime/experts/read_scheduler.hpp"
#include "runtime/experts/replacement_policy.hpp"
#include "runtime/experts/slot_pool.hpp"
#include "runtime/gguf/model_files.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace sluice::experts {

/// Settings of an expert cache.
struct expert_cache_options {
    std::uint64_t slots = 0; ///< experts held at once (at least 1; see memory_plan)
    bool prefetch = true;    ///< read the predicted experts of the next layer ahead
    /// With prefetch: 1 predicts the next layer only, 2 also the layer after it (prediction_depth).
    std::uint32_t prefetch_depth = 1;
    policy_spec policy;           ///< which expert to evict (and pin_hot's share)
    read_scheduler_options reads; ///< the order reads reach the disk
    io::reader_options io;        ///< the reader it makes on the executor it is attached to
};

/// Streams routed experts through a fixed pool of slots. fetch, prefetch and release come from compute threads
/// and take a short lock; reads run and complete on the executor given to `attach`, which must be one thread
/// at a time (a single-threaded io_context) and the same for every pass attached at once. Destroy it only with
/// no forward pass running and no batch holding an entry.
class expert_cache final : public expert_source {
public:
    /// Allocates the pool (`options.slots` slots of `layout.slot_bytes`). Errors: zero slots, a model without
    /// routed experts.
    static result<std::unique_ptr<expert_cache>> create(const gguf::model_files& files, expert_layout layout,
                                                        const expert_cache_options& options);
    ~expert_cache() override;
    expert_cache(const expert_cache&) = delete;
    expert_cache& operator=(const expert_cache&) = delete;

    void fetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) override;
    void prefetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) override;
    /// `ahead` 2 is counted in the prefetch2_ counters; like depth 1 it takes no slot while a fetch waits for
    /// one. An expert already read by a prediction keeps the depth that read it.
    void prefetch_ahead(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids,
                        std::uint32_t ahead) override;
    void release(expert_batch& batch, std::size_t i) noexcept override;
    /// In priority read order, drops the experts of the prediction whose reads are all still held and that no
    /// fetch pinned and no other batch waits for: never read, their slots emptied (prefetch_dropped).
    void retire(expert_batch& batch) noexcept override;
    /// An expert counts as present while its slot holds it or reads it (a failed read counts as missing).
    [[nodiscard]] std::size_t count_missing(std::uint32_t layer, std::span<const std::int32_t> ids) const override;
    [[nodiscard]] bool wants_prediction() const noexcept override { return prefetch_; }
    [[nodiscard]] std::uint32_t prediction_depth() const noexcept override { return prefetch_ ? depth_ : 0; }
    void attach(const boost::asio::any_io_executor& executor) override;
    void detach() noexcept override;
    void count_tokens(std::uint64_t n) noexcept override;

    /// A consistent snapshot of the counters; any thread.
    [[nodiscard]] expert_cache_counters counters() const;
    [[nodiscard]] const expert_layout& layout() const noexcept { return layout_; }

private:
    enum class slot_state : std::uint8_t { empty, loading, ready, failed };
    /// A batch entry that waits on a slot's read (or, queued, for a slot).
    struct waiter {
        expert_batch* batch;
        std::uint32_t entry;
    };
    struct slot {
        slot_state state = slot_state::empty;
        std::uint32_t pins = 0;       ///< fetched entries holding it
        std::uint8_t parts_left = 0;  ///< slab reads still running
        std::uint8_t prefetched = 0;  ///< read by a prediction this many layers ahead, not chosen since (0: no)
        std::vector<waiter> waiters;  ///< entries to publish when its read ends
        std::optional<error> failure; ///< the first failed slab read of the current load
    };

    expert_cache(const gguf::model_files& files, expert_layout layout, const expert_cache_options& options);

    // Under mu_.
    std::int32_t take_slot() noexcept;
    void start_load(std::int32_t s, std::uint32_t layer, std::int32_t expert, std::uint8_t ahead);
    void attach_entry(expert_batch& batch, std::uint32_t i, std::int32_t s);
    void publish_ready(expert_batch& batch, std::uint32_t i, std::int32_t s);
    void unpin(std::int32_t s) noexcept;
    void feed_queued();
    void release_entry(expert_batch& batch, std::uint32_t i, bool drop) noexcept;
    /// A prediction let go of an expert nobody else wants whose reads were never submitted: they are dropped and
    /// the slot is empty again. False when its reads are with the kernel (or others want it).
    bool drop_unsubmitted(std::int32_t s) noexcept;

    // On the executor.
    void read_done(std::int32_t s, std::uint32_t part, const result<void>& r);

    const gguf::model_files* files_;
    expert_layout layout_;
    bool prefetch_;
    std::uint32_t depth_;

    mutable std::mutex mu_;
    slot_pool pool_;
    std::unique_ptr<replacement_policy> policy_;
    std::vector<slot> slots_;
    std::deque<waiter> queued_;      ///< fetched entries waiting for a slot, oldest first
    expert_cache_counters counters_; ///< all but the read statistics
    read_scheduler reads_;
};

} // namespace sluice::experts
