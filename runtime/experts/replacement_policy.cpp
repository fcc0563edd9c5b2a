// LRU and ageing LFU over an intrusive recency list of slots, and the trace simulator.
#include "runtime/experts/replacement_policy.hpp"

#include <limits>
#include <string>

namespace sluice::experts {

result<cache_policy> parse_cache_policy(std::string_view name) {
    if (name == "lru") {
        return cache_policy::lru;
    }
    if (name == "lfu") {
        return cache_policy::lfu;
    }
    return make_error(std::errc::invalid_argument,
                      "unknown cache policy \"" + std::string(name) + "\" (expected lru or lfu)");
}

std::string_view to_string(cache_policy p) noexcept { return p == cache_policy::lfu ? "lfu" : "lru"; }

namespace {

constexpr std::int32_t none = -1;

/// The evictable slots, least recently released first.
class recency_list {
public:
    explicit recency_list(std::uint32_t slots) : prev_(slots, none), next_(slots, none), linked_(slots, false) {}

    void push_back(std::uint32_t s) noexcept {
        prev_[s] = tail_;
        next_[s] = none;
        (tail_ == none ? head_ : next_[static_cast<std::size_t>(tail_)]) = static_cast<std::int32_t>(s);
        tail_ = static_cast<std::int32_t>(s);
        linked_[s] = true;
    }
    void remove(std::uint32_t s) noexcept {
        if (!linked_[s]) {
            return;
        }
        (prev_[s] == none ? head_ : next_[static_cast<std::size_t>(prev_[s])]) = next_[s];
        (next_[s] == none ? tail_ : prev_[static_cast<std::size_t>(next_[s])]) = prev_[s];
        prev_[s] = next_[s] = none;
        linked_[s] = false;
    }
    [[nodiscard]] std::int32_t head() const noexcept { return head_; }
    [[nodiscard]] std::int32_t next(std::uint32_t s) const noexcept { return next_[s]; }

private:
    std::vector<std::int32_t> prev_, next_;
    std::vector<bool> linked_;
    std::int32_t head_ = none, tail_ = none;
};

class lru_policy final : public replacement_policy {
public:
    explicit lru_policy(std::uint32_t slots) : list_(slots) {}
    void on_access(std::uint32_t, std::int32_t) override {}
    void on_evictable(std::uint32_t slot, std::uint32_t, std::int32_t, bool) override { list_.push_back(slot); }
    void on_pinned(std::uint32_t slot) override { list_.remove(slot); }
    std::optional<std::uint32_t> evict() override {
        const auto s = list_.head();
        if (s == none) {
            return std::nullopt;
        }
        list_.remove(static_cast<std::uint32_t>(s));
        return static_cast<std::uint32_t>(s);
    }

private:
    recency_list list_;
};

class lfu_policy final : public replacement_policy {
public:
    lfu_policy(std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts)
        : list_(slots), held_(slots), max_experts_(max_experts), freq_(std::size_t{layers} * max_experts, 0) {}

    void on_access(std::uint32_t layer, std::int32_t expert) override {
        ++freq_[index(layer, expert)];
        if (++lookups_ >= 8 * freq_.size()) { // ageing: halve every count now and then
            for (auto& f : freq_) {
                f /= 2;
            }
            lookups_ = 0;
        }
    }
    void on_evictable(std::uint32_t slot, std::uint32_t layer, std::int32_t expert, bool prefetched) override {
        held_[slot] = {layer, expert, prefetched};
        list_.push_back(slot);
    }
    void on_pinned(std::uint32_t slot) override { list_.remove(slot); }
    std::optional<std::uint32_t> evict() override {
        std::int32_t victim = none;
        std::uint32_t victim_freq = std::numeric_limits<std::uint32_t>::max();
        for (auto s = list_.head(); s != none; s = list_.next(static_cast<std::uint32_t>(s))) {
            const auto& h = held_[static_cast<std::size_t>(s)];
            // A prefetched expert not chosen yet has no count of its own: keep it until it had its chance.
            const auto f =
                h.prefetched ? std::numeric_limits<std::uint32_t>::max() - 1 : freq_[index(h.layer, h.expert)];
            if (f < victim_freq) { // strictly: among equals the least recent wins
                victim = s;
                victim_freq = f;
            }
        }
        if (victim == none) {
            return std::nullopt;
        }
        list_.remove(static_cast<std::uint32_t>(victim));
        return static_cast<std::uint32_t>(victim);
    }

private:
    struct holding {
        std::uint32_t layer = 0;
        std::int32_t expert = 0;
        bool prefetched = false;
    };
    [[nodiscard]] std::size_t index(std::uint32_t layer, std::int32_t expert) const noexcept {
        return std::size_t{layer} * max_experts_ + static_cast<std::size_t>(expert);
    }

    recency_list list_;
    std::vector<holding> held_;
    std::uint32_t max_experts_;
    std::vector<std::uint32_t> freq_;
    std::uint64_t lookups_ = 0;
};

} // namespace

std::unique_ptr<replacement_policy> make_policy(cache_policy p, std::uint32_t slots, std::uint32_t layers,
                                                std::uint32_t max_experts) {
    if (p == cache_policy::lfu) {
        return std::make_unique<lfu_policy>(slots, layers, max_experts);
    }
    return std::make_unique<lru_policy>(slots);
}

simulation simulate(replacement_policy& policy, std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts,
                    std::span<const expert_access> trace) {
    simulation out;
    std::vector<std::int32_t> slot_of(std::size_t{layers} * max_experts, none);
    std::vector<expert_access> held(slots);
    std::vector<bool> unused_prefetch(slots, false);
    std::uint32_t filled = 0;
    const auto key_of = [&](const expert_access& a) {
        return std::size_t{a.layer} * max_experts + static_cast<std::size_t>(a.expert);
    };
    // A free slot, else the policy's victim (none only if nothing is evictable, which cannot happen here).
    const auto take_slot = [&]() -> std::int32_t {
        if (filled < slots) {
            return static_cast<std::int32_t>(filled++);
        }
        const auto victim = policy.evict();
        if (!victim) {
            return none;
        }
        const auto& v = held[*victim];
        slot_of[key_of(v)] = none;
        out.victims.push_back(v);
        out.prefetch_wasted += unused_prefetch[*victim] ? 1 : 0;
        return static_cast<std::int32_t>(*victim);
    };
    for (const auto& a : trace) {
        const auto key = key_of(a);
        auto s = slot_of[key];
        if (a.prefetch) {
            if (s != none || (s = take_slot()) == none) {
                continue;
            }
            ++out.prefetch_reads;
            slot_of[key] = s;
            held[static_cast<std::size_t>(s)] = {a.layer, a.expert, false};
            unused_prefetch[static_cast<std::size_t>(s)] = true;
            policy.on_evictable(static_cast<std::uint32_t>(s), a.layer, a.expert, true);
            continue;
        }
        policy.on_access(a.layer, a.expert);
        if (s != none) {
            ++out.hits;
            out.prefetch_used += unused_prefetch[static_cast<std::size_t>(s)] ? 1 : 0;
            unused_prefetch[static_cast<std::size_t>(s)] = false;
            policy.on_pinned(static_cast<std::uint32_t>(s));
        } else {
            ++out.misses;
            if ((s = take_slot()) == none) {
                continue;
            }
            slot_of[key] = s;
            held[static_cast<std::size_t>(s)] = a;
            unused_prefetch[static_cast<std::size_t>(s)] = false;
        }
        policy.on_evictable(static_cast<std::uint32_t>(s), a.layer, a.expert, false);
    }
    return out;
}

} // namespace sluice::experts
