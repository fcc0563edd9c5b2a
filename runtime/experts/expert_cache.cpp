// The expert cache: fetched entries pin their slots, prefetched ones only watch them; a slot's read is shared
// by every entry that wants the expert; entries with no slot free wait in a FIFO until one is; replacement is
// the policy's; reads are the read scheduler's; the counters are kept here.
#include "runtime/experts/expert_cache.hpp"

#include <algorithm>
#include <array>

namespace sluice::experts {

namespace {

constexpr std::uint64_t page = 4096;
constexpr std::int32_t none = slot_pool::none;

} // namespace

result<std::unique_ptr<expert_cache>> expert_cache::create(const gguf::model_files& files, expert_layout layout,
                                                           const expert_cache_options& options) {
    if (layout.total_count == 0 || layout.slot_bytes == 0) {
        return make_error(std::errc::invalid_argument, "expert cache: the model has no routed experts");
    }
    if (options.slots == 0) {
        return make_error(std::errc::invalid_argument, "expert cache: zero slots");
    }
    return std::unique_ptr<expert_cache>(new expert_cache(files, std::move(layout), options));
}

expert_cache::expert_cache(const gguf::model_files& files, expert_layout layout, const expert_cache_options& options)
    : files_(&files), layout_(std::move(layout)), prefetch_(options.prefetch),
      depth_(std::clamp<std::uint32_t>(options.prefetch_depth, 1, 2)), pool_(layout_, options.slots),
      policy_(make_policy(options.policy, pool_.size(), pool_.layers(), pool_.max_experts())), slots_(pool_.size()),
      reads_(options.io, options.reads,
             [this](std::int32_t s, std::uint32_t part, const result<void>& r) { read_done(s, part, r); }) {
    reads_.keep_alive(pool_.memory_owner()); // a read the kernel still holds when the cache goes lands there
    for (auto& x : slots_) {
        x.waiters.reserve(4); // a few passes wanting one expert at once, without allocating under the lock
    }
    counters_.layers.resize(layout_.layers.size());
    counters_.slots = pool_.size();
    counters_.slot_bytes = layout_.slot_bytes;
}

expert_cache::~expert_cache() = default;

std::int32_t expert_cache::take_slot() noexcept {
    if (const auto s = pool_.take_empty(); s != none) {
        return s;
    }
    const auto victim = policy_->evict();
    if (!victim) {
        return none;
    }
    const auto s = static_cast<std::int32_t>(*victim);
    auto& x = slots_[*victim];
    const auto layer = static_cast<std::size_t>(pool_.layer_of(s));
    ++counters_.layers[layer].evictions;
    ++counters_.evictions;
    if (x.prefetched != 0) {
        ++counters_.prefetch_wasted;
        counters_.prefetch2_wasted += x.prefetched == 2 ? 1 : 0;
    }
    pool_.unassign(s);
    x.state = slot_state::empty;
    x.prefetched = 0;
    return s;
}

void expert_cache::start_load(std::int32_t s, std::uint32_t layer, std::int32_t expert, std::uint8_t ahead) {
    pool_.assign(s, layer, expert);
    auto& x = slots_[static_cast<std::size_t>(s)];
    x.state = slot_state::loading;
    x.prefetched = ahead;
    x.failure.reset();
    x.parts_left = 0;
    if (ahead != 0) {
        ++counters_.prefetch_issued;
        counters_.prefetch2_issued += ahead == 2 ? 1 : 0;
    }
    std::array<slab_read, max_expert_parts> reads;
    std::size_t n = 0;
    const auto& ll = layout_.layers[layer];
    for (std::uint32_t part = 0; part < max_expert_parts; ++part) {
        const auto& slab = ll.slabs[part];
        if (slab.bytes == 0) {
            continue;
        }
        const auto& f = files_->parts()[slab.split].file;
        const std::uint64_t offset = slab.offset + static_cast<std::uint64_t>(expert) * slab.bytes;
        const std::uint64_t lo = offset & ~(page - 1);
        // The last expert of a file may end short of a page: its range stops at the end of the file (a file
        // shorter than its header says fails the read at its end).
        const std::uint64_t hi = std::min<std::uint64_t>((offset + slab.bytes + page - 1) & ~(page - 1), f.size());
        const auto len = static_cast<std::size_t>(std::max(hi, offset + slab.bytes) - lo);
        reads[n++] = {s, part, &f, lo, std::span<std::byte>(pool_.region(s, layer, part), len), ahead};
        ++x.parts_left;
    }
    reads_.enqueue(std::span<const slab_read>(reads.data(), n));
}

void expert_cache::attach_entry(expert_batch& batch, std::uint32_t i, std::int32_t s) {
    auto& x = slots_[static_cast<std::size_t>(s)];
    auto& e = batch.at(i);
    e.slot = s;
    if (batch.purpose() == batch_purpose::fetch && x.pins++ == 0 && x.state == slot_state::ready) {
        policy_->on_pinned(static_cast<std::uint32_t>(s));
    }
    if (x.state != slot_state::ready) {
        x.waiters.push_back({&batch, i});
        return;
    }
    publish_ready(batch, i, s);
}

void expert_cache::publish_ready(expert_batch& batch, std::uint32_t i, std::int32_t s) {
    auto& e = batch.at(i);
    if (batch.purpose() == batch_purpose::fetch) {
        const auto layer = batch.layer();
        const auto& ll = layout_.layers[layer];
        for (std::size_t part = 0; part < max_expert_parts; ++part) {
            const auto& slab = ll.slabs[part];
            const std::uint64_t offset = slab.offset + static_cast<std::uint64_t>(e.expert) * slab.bytes;
            e.parts[part] = slab.bytes ? pool_.region(s, layer, part) + (offset & (page - 1)) : nullptr;
        }
    }
    batch.publish(i, entry_state::ready);
}

void expert_cache::fetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) {
    batch.reset(batch_purpose::fetch, layer, ids);
    std::lock_guard lock(mu_);
    auto& lc = counters_.layers[layer];
    // First every expert already in a slot (ready or being read) is pinned, then the others take slots: a miss
    // earlier in the list must never evict an expert that a later entry of the same request would have found.
    for (std::uint32_t i = 0; i < batch.size(); ++i) {
        const auto expert = batch.expert(i);
        policy_->on_access(layer, expert);
        const auto s = pool_.find(layer, expert);
        const bool hit = s != none && slots_[static_cast<std::size_t>(s)].state == slot_state::ready;
        ++(hit ? lc.hits : lc.misses);
        ++(hit ? counters_.hits : counters_.misses);
        if (s == none) {
            continue;
        }
        auto& x = slots_[static_cast<std::size_t>(s)];
        if (x.prefetched != 0) { // predicted right (its read may still be running)
            ++counters_.prefetch_used;
            counters_.prefetch2_used += x.prefetched == 2 ? 1 : 0;
            x.prefetched = 0;
            if (x.state == slot_state::loading && reads_.raise(s, 0)) {
                ++counters_.prefetch_promoted; // the layer waits for it now: ahead of every prediction
            }
        }
        attach_entry(batch, i, s);
    }
    for (std::uint32_t i = 0; i < batch.size(); ++i) {
        if (batch.at(i).slot != none) {
            continue;
        }
        const auto s = take_slot();
        if (s == none) {
            queued_.push_back({&batch, i}); // every slot is in use: wait for one
            continue;
        }
        start_load(s, layer, batch.expert(i), 0);
        attach_entry(batch, i, s);
    }
}

std::size_t expert_cache::count_missing(std::uint32_t layer, std::span<const std::int32_t> ids) const {
    std::lock_guard lock(mu_);
    std::size_t missing = 0;
    for (const auto expert : ids) {
        const auto s = pool_.find(layer, expert);
        const bool present = s != none && (slots_[static_cast<std::size_t>(s)].state == slot_state::ready ||
                                           slots_[static_cast<std::size_t>(s)].state == slot_state::loading);
        missing += present ? 0 : 1;
    }
    return missing;
}

void expert_cache::prefetch(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids) {
    prefetch_ahead(batch, layer, ids, 1);
}

void expert_cache::prefetch_ahead(expert_batch& batch, std::uint32_t layer, std::span<const std::int32_t> ids,
                                  std::uint32_t ahead) {
    batch.reset(batch_purpose::prefetch, layer, ids);
    if (!prefetch_) {
        for (std::size_t i = 0; i < batch.size(); ++i) {
            batch.publish(i, entry_state::released);
        }
        return;
    }
    std::lock_guard lock(mu_);
    // Predicted experts already in a slot are watched first and, when evictable, count as just used (they are
    // about to be), so that reading the others never evicts one of them.
    for (std::uint32_t i = 0; i < batch.size(); ++i) {
        const auto s = pool_.find(layer, batch.expert(i));
        if (s == none) {
            continue;
        }
        const auto& x = slots_[static_cast<std::size_t>(s)];
        if (x.pins == 0 && x.state == slot_state::ready) {
            policy_->on_pinned(static_cast<std::uint32_t>(s));
            policy_->on_evictable(static_cast<std::uint32_t>(s), layer, batch.expert(i), x.prefetched != 0);
        }
        if (x.state == slot_state::loading) {
            reads_.raise(s, static_cast<std::uint8_t>(std::min<std::uint32_t>(ahead, 2))); // a nearer prediction
        }
        attach_entry(batch, i, s);
    }
    // A slot wanted by a fetch that is waiting for one is never taken by a prediction.
    bool room = queued_.empty();
    for (std::uint32_t i = 0; i < batch.size(); ++i) {
        if (batch.at(i).slot != none) {
            continue;
        }
        const auto s = room ? take_slot() : none;
        room = s != none;
        if (s == none) {
            batch.publish(i, entry_state::released); // no room: not read, nothing to track
            continue;
        }
        start_load(s, layer, batch.expert(i), ahead >= 2 ? 2 : 1);
        attach_entry(batch, i, s);
    }
}

void expert_cache::unpin(std::int32_t s) noexcept {
    auto& x = slots_[static_cast<std::size_t>(s)];
    if (--x.pins > 0) {
        return;
    }
    if (x.state == slot_state::ready) {
        policy_->on_evictable(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(pool_.layer_of(s)),
                              pool_.expert_of(s), false);
        feed_queued();
    } else if (x.state == slot_state::failed) {
        x = slot{};
        pool_.give_back(s);
        feed_queued();
    }
    // A slot still loading becomes evictable when its read ends.
}

void expert_cache::release(expert_batch& batch, std::size_t i) noexcept {
    std::lock_guard lock(mu_);
    release_entry(batch, static_cast<std::uint32_t>(i), false);
}

void expert_cache::retire(expert_batch& batch) noexcept {
    const bool drop = batch.purpose() == batch_purpose::prefetch && reads_.order() == read_order::priority;
    std::lock_guard lock(mu_);
    for (std::uint32_t i = 0; i < batch.size(); ++i) {
        release_entry(batch, i, drop);
    }
}

void expert_cache::release_entry(expert_batch& batch, std::uint32_t i, bool drop) noexcept {
    if (batch.state(i) == entry_state::released) {
        return;
    }
    const auto s = batch.at(i).slot;
    if (s == none) {
        std::erase_if(queued_, [&](const waiter& w) { return w.batch == &batch && w.entry == i; });
    } else {
        auto& x = slots_[static_cast<std::size_t>(s)];
        std::erase_if(x.waiters, [&](const waiter& w) { return w.batch == &batch && w.entry == i; });
        if (batch.purpose() == batch_purpose::fetch) {
            unpin(s);
        } else if (drop) {
            drop_unsubmitted(s);
        }
    }
    batch.publish(i, entry_state::released);
}

bool expert_cache::drop_unsubmitted(std::int32_t s) noexcept {
    auto& x = slots_[static_cast<std::size_t>(s)];
    if (x.state != slot_state::loading || x.pins != 0 || !x.waiters.empty() || x.prefetched == 0 ||
        !reads_.cancel(s, x.parts_left)) {
        return false;
    }
    ++counters_.prefetch_dropped;
    counters_.prefetch2_dropped += x.prefetched == 2 ? 1 : 0;
    pool_.unassign(s);
    x.state = slot_state::empty;
    x.prefetched = 0;
    x.parts_left = 0;
    x.failure.reset();
    pool_.give_back(s);
    feed_queued();
    return true;
}

void expert_cache::feed_queued() {
    while (!queued_.empty()) {
        const auto w = queued_.front();
        const auto layer = w.batch->layer();
        const auto expert = w.batch->expert(w.entry);
        auto s = pool_.find(layer, expert); // read meanwhile for someone else
        if (s == none) {
            s = take_slot();
            if (s == none) {
                return;
            }
            start_load(s, layer, expert, 0);
        }
        queued_.pop_front();
        attach_entry(*w.batch, w.entry, s);
        w.batch->notify();
    }
}

void expert_cache::read_done(std::int32_t s, std::uint32_t, const result<void>& r) {
    std::lock_guard lock(mu_);
    auto& x = slots_[static_cast<std::size_t>(s)];
    if (!r && !x.failure) {
        x.failure = r.error();
    }
    if (--x.parts_left > 0) {
        return;
    }
    auto waiters = std::move(x.waiters);
    x.waiters.clear();
    x.waiters.reserve(4);
    if (x.failure) {
        const auto failure = *x.failure;
        counters_.last_read_failure = failure.message;
        pool_.unassign(s); // the next fetch of this expert reads it again
        x.state = slot_state::failed;
        for (const auto& w : waiters) {
            w.batch->fail(w.entry, failure);
            w.batch->notify();
        }
        if (x.pins == 0) {
            x = slot{};
            pool_.give_back(s);
            feed_queued();
        }
        return;
    }
    x.state = slot_state::ready;
    for (const auto& w : waiters) {
        publish_ready(*w.batch, w.entry, s);
        w.batch->notify();
    }
    if (x.pins == 0) {
        policy_->on_evictable(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(pool_.layer_of(s)),
                              pool_.expert_of(s), x.prefetched != 0);
        feed_queued();
    }
}

void expert_cache::attach(const boost::asio::any_io_executor& executor) {
    reads_.attach(executor);
}

void expert_cache::detach() noexcept {
    reads_.detach();
}

void expert_cache::count_tokens(std::uint64_t n) noexcept {
    std::lock_guard lock(mu_);
    counters_.tokens += n;
}

expert_cache_counters expert_cache::counters() const {
    expert_cache_counters c;
    {
        std::lock_guard lock(mu_);
        c = counters_;
        c.slots_filled = pool_.filled();
    }
    static_cast<read_stats&>(c) = reads_.stats();
    return c;
}

} // namespace sluice::experts
