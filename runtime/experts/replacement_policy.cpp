// The replacement policies (LRU, ageing LFU, LRU-2, per-layer quotas, LRU with the hottest experts pinned) over
// intrusive recency lists of slots, their names, and the trace simulator.
#include "runtime/experts/replacement_policy.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

namespace sluice::experts {

namespace {

struct policy_name {
    std::string_view name;
    cache_policy policy;
};
constexpr policy_name policy_names[] = {{"lru", cache_policy::lru},
                                        {"lfu", cache_policy::lfu},
                                        {"lru-2", cache_policy::lru2},
                                        {"lru-2-cycle", cache_policy::lru2_cycle},
                                        {"layer-quota", cache_policy::layer_quota},
                                        {"pin-hot", cache_policy::pin_hot}};

} // namespace

result<cache_policy> parse_cache_policy(std::string_view name) {
    for (const auto& n : policy_names) {
        if (n.name == name) {
            return n.policy;
        }
    }
    std::string message = "unknown cache policy \"";
    message.append(name);
    message.append("\" (expected ");
    message.append(cache_policy_names);
    message.push_back(')');
    return make_error(std::errc::invalid_argument, message);
}

result<policy_spec> parse_policy_spec(std::string_view text) {
    const auto colon = text.find(':');
    auto policy = parse_cache_policy(text.substr(0, colon));
    if (!policy) {
        return policy.error();
    }
    policy_spec spec{*policy};
    if (colon == std::string_view::npos) {
        return spec;
    }
    const auto arg = text.substr(colon + 1);
    std::uint32_t percent = 0;
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), percent);
    std::string message = "cache policy \"";
    message.append(text);
    if (*policy != cache_policy::pin_hot) {
        message.append("\": only pin-hot takes a parameter (pin-hot:PERCENT)");
        return make_error(std::errc::invalid_argument, message);
    }
    if (ec != std::errc() || end != arg.data() + arg.size() || percent < 1 || percent > 99) {
        message.append("\": the share of pinned slots must be a percentage, 1 to 99");
        return make_error(std::errc::invalid_argument, message);
    }
    spec.pin_percent = percent;
    return spec;
}

std::string_view to_string(cache_policy p) noexcept {
    for (const auto& n : policy_names) {
        if (n.policy == p) {
            return n.name;
        }
    }
    return "lru";
}

std::string to_string(const policy_spec& s) {
    std::string out(to_string(s.policy));
    if (s.policy == cache_policy::pin_hot) {
        out.push_back(':');
        out.append(std::to_string(s.pin_percent));
    }
    return out;
}

namespace {

constexpr std::int32_t none = -1;

/// Doubly linked lists of evictable slots, least recently released first: `lists` lists over one set of links
/// (a slot is in at most one of them).
class recency_list {
public:
    explicit recency_list(std::uint32_t slots, std::uint32_t lists = 1)
        : prev_(slots, none), next_(slots, none), list_of_(slots, none), head_(lists, none), tail_(lists, none) {}

    void push_back(std::uint32_t s, std::uint32_t list = 0) noexcept {
        auto& tail = tail_[list];
        prev_[s] = tail;
        next_[s] = none;
        (tail == none ? head_[list] : next_[static_cast<std::size_t>(tail)]) = static_cast<std::int32_t>(s);
        tail = static_cast<std::int32_t>(s);
        list_of_[s] = static_cast<std::int32_t>(list);
    }
    void remove(std::uint32_t s) noexcept {
        if (list_of_[s] == none) {
            return;
        }
        const auto list = static_cast<std::size_t>(list_of_[s]);
        (prev_[s] == none ? head_[list] : next_[static_cast<std::size_t>(prev_[s])]) = next_[s];
        (next_[s] == none ? tail_[list] : prev_[static_cast<std::size_t>(next_[s])]) = prev_[s];
        prev_[s] = next_[s] = none;
        list_of_[s] = none;
    }
    /// Takes slot `s` off its list and returns it as the victim; none: nothing to evict.
    std::optional<std::uint32_t> take(std::int32_t s) noexcept {
        if (s == none) {
            return std::nullopt;
        }
        remove(static_cast<std::uint32_t>(s));
        return static_cast<std::uint32_t>(s);
    }
    [[nodiscard]] std::int32_t head(std::uint32_t list = 0) const noexcept { return head_[list]; }
    [[nodiscard]] std::int32_t next(std::uint32_t s) const noexcept { return next_[s]; }

private:
    std::vector<std::int32_t> prev_, next_, list_of_;
    std::vector<std::int32_t> head_, tail_;
};

/// Router choices per (layer, expert), every count halved after 8 x (layers x experts) choices, so that old
/// habits fade.
class aged_counts {
public:
    aged_counts(std::uint32_t layers, std::uint32_t max_experts)
        : max_experts_(max_experts), freq_(std::size_t{layers} * max_experts, 0) {}

    void add(std::uint32_t layer, std::int32_t expert) noexcept {
        ++freq_[index(layer, expert)];
        if (++lookups_ >= 8 * freq_.size()) {
            for (auto& f : freq_) {
                f /= 2;
            }
            lookups_ = 0;
        }
    }
    [[nodiscard]] std::uint32_t operator()(std::uint32_t layer, std::int32_t expert) const noexcept {
        return freq_[index(layer, expert)];
    }
    [[nodiscard]] std::span<const std::uint32_t> all() const noexcept { return freq_; }
    [[nodiscard]] std::size_t index(std::uint32_t layer, std::int32_t expert) const noexcept {
        return std::size_t{layer} * max_experts_ + static_cast<std::size_t>(expert);
    }

private:
    std::uint32_t max_experts_;
    std::vector<std::uint32_t> freq_;
    std::uint64_t lookups_ = 0;
};

/// What an evictable slot holds.
struct holding {
    std::uint32_t layer = 0;
    std::int32_t expert = 0;
    bool prefetched = false;
};

class lru_policy final : public replacement_policy {
public:
    explicit lru_policy(std::uint32_t slots) : list_(slots) {}
    void on_access(std::uint32_t, std::int32_t) override {}
    void on_evictable(std::uint32_t slot, std::uint32_t, std::int32_t, bool) override { list_.push_back(slot); }
    void on_pinned(std::uint32_t slot) override { list_.remove(slot); }
    std::optional<std::uint32_t> evict() override { return list_.take(list_.head()); }

private:
    recency_list list_;
};

class lfu_policy final : public replacement_policy {
public:
    lfu_policy(std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts)
        : list_(slots), held_(slots), counts_(layers, max_experts) {}

    void on_access(std::uint32_t layer, std::int32_t expert) override { counts_.add(layer, expert); }
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
            const auto f = h.prefetched ? std::numeric_limits<std::uint32_t>::max() - 1 : counts_(h.layer, h.expert);
            if (f < victim_freq) { // strictly: among equals the least recent wins
                victim = s;
                victim_freq = f;
            }
        }
        return list_.take(victim);
    }

private:
    recency_list list_;
    std::vector<holding> held_;
    aged_counts counts_;
};

/// LRU-2 (O'Neil et al., 1993): the victim is the expert whose second-to-last choice is oldest; one chosen once
/// since the start has none and goes first. Frequency and recency in one key: an expert chosen twice recently
/// outlives one chosen once, however recent. Among equals (chosen once), the least recently released goes.
class lru2_policy final : public replacement_policy {
public:
    lru2_policy(std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts)
        : list_(slots), held_(slots), max_experts_(max_experts), last_(std::size_t{layers} * max_experts, 0),
          before_(last_.size(), 0) {}

    void on_access(std::uint32_t layer, std::int32_t expert) override {
        const auto i = index(layer, expert);
        before_[i] = last_[i];
        last_[i] = ++clock_;
    }
    void on_evictable(std::uint32_t slot, std::uint32_t layer, std::int32_t expert, bool prefetched) override {
        held_[slot] = {layer, expert, prefetched, clock_};
        list_.push_back(slot);
    }
    void on_pinned(std::uint32_t slot) override { list_.remove(slot); }
    std::optional<std::uint32_t> evict() override {
        std::int32_t victim = none;
        std::uint64_t victim_key = std::numeric_limits<std::uint64_t>::max();
        for (auto s = list_.head(); s != none; s = list_.next(static_cast<std::uint32_t>(s))) {
            const auto& h = held_[static_cast<std::size_t>(s)];
            // A prefetched expert not chosen yet counts its read as its second-to-last choice: kept over experts
            // not chosen twice since, and evicted once enough have been (an unused prediction does not stay).
            const auto key = h.prefetched ? h.read_at : before_[index(h.layer, h.expert)];
            if (key < victim_key) {
                victim = s;
                victim_key = key;
                if (key == 0) {
                    break; // chosen once: nothing goes before it, and it is the least recent such
                }
            }
        }
        return list_.take(victim);
    }

private:
    [[nodiscard]] std::size_t index(std::uint32_t layer, std::int32_t expert) const noexcept {
        return std::size_t{layer} * max_experts_ + static_cast<std::size_t>(expert);
    }

    struct held_expert {
        std::uint32_t layer = 0;
        std::int32_t expert = 0;
        bool prefetched = false;
        std::uint64_t read_at = 0; ///< the clock when it became evictable
    };
    recency_list list_;
    std::vector<held_expert> held_;
    std::uint32_t max_experts_;
    std::vector<std::uint64_t> last_, before_; ///< clock of the last and second-to-last choice, 0: none
    std::uint64_t clock_ = 0;
};

/// LRU-2 that knows the forward pass visits the layers in order, pass after pass (decode steps, and batch steps of
/// many sequences). An expert is fresh when it was chosen since its layer's last visit (read ahead for a layer still
/// to come in this pass counts too): it is likely chosen again at that layer's next visit. Stale experts go first,
/// in LRU-2 order. When every evictable expert is fresh (a step's experts over all layers outnumber the slots, as
/// with many sequences per step), plain LRU would evict the expert whose layer comes back soonest, so that every
/// expert is read again on every pass; this evicts the one whose layer comes back last (the layers just passed,
/// most recent first), keeping the rest of the cache for the next pass, as an optimal policy does on a cycle.
class lru2_cycle_policy final : public replacement_policy {
public:
    lru2_cycle_policy(std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts)
        : list_(slots), held_(slots), layers_(std::max(1u, layers)), max_experts_(max_experts),
          last_(std::size_t{layers} * max_experts, 0), before_(last_.size(), 0), pass_of_(last_.size(), 0) {}

    void on_access(std::uint32_t layer, std::int32_t expert) override {
        if (layer < layer_) {
            ++pass_;
        }
        layer_ = layer;
        const auto i = index(layer, expert);
        before_[i] = last_[i];
        last_[i] = ++clock_;
        pass_of_[i] = pass_;
    }
    void on_evictable(std::uint32_t slot, std::uint32_t layer, std::int32_t expert, bool prefetched) override {
        held_[slot] = {layer, expert, prefetched, clock_, pass_};
        list_.push_back(slot);
    }
    void on_pinned(std::uint32_t slot) override { list_.remove(slot); }
    std::optional<std::uint32_t> evict() override {
        std::int32_t stale = none, fresh = none;
        std::uint64_t stale_key = std::numeric_limits<std::uint64_t>::max();
        std::uint32_t fresh_distance = 0;
        std::uint64_t fresh_key = std::numeric_limits<std::uint64_t>::max();
        for (auto s = list_.head(); s != none; s = list_.next(static_cast<std::uint32_t>(s))) {
            const auto& h = held_[static_cast<std::size_t>(s)];
            const auto key = h.prefetched ? h.read_at : before_[index(h.layer, h.expert)];
            if (!is_fresh(h)) {
                if (key < stale_key) {
                    stale = s;
                    stale_key = key;
                }
                continue;
            }
            // Layers until this expert's layer comes again: the layer just passed is the farthest.
            const std::uint32_t distance = h.layer > layer_ ? h.layer - layer_ : layers_ - layer_ + h.layer;
            if (distance > fresh_distance || (distance == fresh_distance && key < fresh_key)) {
                fresh = s;
                fresh_distance = distance;
                fresh_key = key;
            }
        }
        return list_.take(stale != none ? stale : fresh);
    }

private:
    struct held_expert {
        std::uint32_t layer = 0;
        std::int32_t expert = 0;
        bool prefetched = false;
        std::uint64_t read_at = 0;   ///< the clock when it became evictable
        std::uint64_t read_pass = 0; ///< the pass then
    };
    [[nodiscard]] std::size_t index(std::uint32_t layer, std::int32_t expert) const noexcept {
        return std::size_t{layer} * max_experts_ + static_cast<std::size_t>(expert);
    }
    /// Chosen (or, not chosen yet, read ahead) since its layer's last visit.
    [[nodiscard]] bool is_fresh(const held_expert& h) const noexcept {
        if (h.prefetched) { // read ahead for a layer of this pass still to come
            return h.read_pass == pass_ && h.layer > layer_;
        }
        const auto pass = pass_of_[index(h.layer, h.expert)];
        return pass == pass_ || (pass + 1 == pass_ && h.layer > layer_);
    }

    recency_list list_;
    std::vector<held_expert> held_;
    std::uint32_t layers_;
    std::uint32_t max_experts_;
    std::vector<std::uint64_t> last_, before_; ///< clock of the last and second-to-last choice, 0: none
    std::vector<std::uint64_t> pass_of_;       ///< the pass of the last choice
    std::uint64_t clock_ = 0;
    std::uint64_t pass_ = 1;  ///< passes over the layers: a choice of a lower layer than the last starts one
    std::uint32_t layer_ = 0; ///< the layer of the last choice
};

/// Per-layer quotas: each layer's share of the slots is slots / layers; the victim is the least recently released
/// evictable slot of the layer that holds the most slots over its share, so one busy layer cannot push the others'
/// experts out. (Layers without routed experts hold nothing; that shifts every layer's excess alike.)
class layer_quota_policy final : public replacement_policy {
public:
    layer_quota_policy(std::uint32_t slots, std::uint32_t layers)
        : lists_(slots, layers), layer_of_(slots, none), held_(layers, 0), quota_(layers, 0) {
        for (std::uint32_t l = 0; l < layers; ++l) {
            quota_[l] = static_cast<std::int64_t>(slots / layers + (l < slots % layers ? 1 : 0));
        }
    }

    void on_access(std::uint32_t, std::int32_t) override {}
    void on_evictable(std::uint32_t slot, std::uint32_t layer, std::int32_t, bool) override {
        if (layer_of_[slot] != static_cast<std::int32_t>(layer)) { // newly filled (its content changes only by evict)
            if (layer_of_[slot] != none) {
                --held_[static_cast<std::size_t>(layer_of_[slot])];
            }
            layer_of_[slot] = static_cast<std::int32_t>(layer);
            ++held_[layer];
        }
        lists_.push_back(slot, layer);
    }
    void on_pinned(std::uint32_t slot) override { lists_.remove(slot); }
    std::optional<std::uint32_t> evict() override {
        std::int32_t layer = none;
        std::int64_t excess = std::numeric_limits<std::int64_t>::min();
        for (std::uint32_t l = 0; l < held_.size(); ++l) {
            if (lists_.head(l) != none && held_[l] - quota_[l] > excess) {
                layer = static_cast<std::int32_t>(l);
                excess = held_[l] - quota_[l];
            }
        }
        if (layer == none) {
            return std::nullopt;
        }
        const auto s = static_cast<std::uint32_t>(lists_.head(static_cast<std::uint32_t>(layer)));
        lists_.remove(s);
        --held_[static_cast<std::size_t>(layer)];
        layer_of_[s] = none;
        return s;
    }

private:
    recency_list lists_;                 ///< one list per layer
    std::vector<std::int32_t> layer_of_; ///< the layer a slot's expert belongs to, none: counted nowhere
    std::vector<std::int64_t> held_, quota_;
};

/// LRU that passes over the hottest experts: the `pin_percent`% of the slots' worth of experts with the highest
/// live router counts (aged as in lfu, the set recomputed every `slots` choices) are never evicted while another
/// slot is evictable. The rest of the cache is plain LRU, so the hot set cannot starve the experts of the moment.
class pin_hot_policy final : public replacement_policy {
public:
    pin_hot_policy(std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts, std::uint32_t pin_percent)
        : list_(slots), held_(slots), counts_(layers, max_experts), hot_(std::size_t{layers} * max_experts, 0),
          pinned_(std::max<std::uint64_t>(1, std::uint64_t{slots} * pin_percent / 100)), refresh_(std::max(1u, slots)) {
    }

    void on_access(std::uint32_t layer, std::int32_t expert) override {
        counts_.add(layer, expert);
        if (++since_refresh_ >= refresh_) {
            refresh_hot();
        }
    }
    void on_evictable(std::uint32_t slot, std::uint32_t layer, std::int32_t expert, bool prefetched) override {
        held_[slot] = {layer, expert, prefetched};
        list_.push_back(slot);
    }
    void on_pinned(std::uint32_t slot) override { list_.remove(slot); }
    std::optional<std::uint32_t> evict() override {
        auto victim = list_.head();
        for (auto s = victim; s != none; s = list_.next(static_cast<std::uint32_t>(s))) {
            const auto& h = held_[static_cast<std::size_t>(s)];
            if (!hot_[counts_.index(h.layer, h.expert)]) {
                victim = s;
                break;
            }
        }
        return list_.take(victim);
    }

private:
    // The hot set: the `pinned_` experts with the highest counts (ties to the lower index), none with a count of 0.
    void refresh_hot() {
        since_refresh_ = 0;
        const auto all = counts_.all();
        order_.clear();
        for (std::uint32_t i = 0; i < all.size(); ++i) {
            if (all[i] > 0) {
                order_.push_back(i);
            }
        }
        const auto keep = static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(pinned_, order_.size()));
        std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(), [&](std::uint32_t a, std::uint32_t b) {
            return all[a] > all[b] || (all[a] == all[b] && a < b);
        });
        std::fill(hot_.begin(), hot_.end(), 0);
        for (std::ptrdiff_t i = 0; i < keep; ++i) {
            hot_[order_[static_cast<std::size_t>(i)]] = 1;
        }
    }

    recency_list list_;
    std::vector<holding> held_;
    aged_counts counts_;
    std::vector<std::uint8_t> hot_;
    std::vector<std::uint32_t> order_;
    std::uint64_t pinned_;
    std::uint32_t refresh_;
    std::uint32_t since_refresh_ = 0;
};

} // namespace

std::unique_ptr<replacement_policy> make_policy(cache_policy p, std::uint32_t slots, std::uint32_t layers,
                                                std::uint32_t max_experts) {
    return make_policy(policy_spec{p}, slots, layers, max_experts);
}

std::unique_ptr<replacement_policy> make_policy(const policy_spec& spec, std::uint32_t slots, std::uint32_t layers,
                                                std::uint32_t max_experts) {
    switch (spec.policy) {
    case cache_policy::lfu:
        return std::make_unique<lfu_policy>(slots, layers, max_experts);
    case cache_policy::lru2:
        return std::make_unique<lru2_policy>(slots, layers, max_experts);
    case cache_policy::lru2_cycle:
        return std::make_unique<lru2_cycle_policy>(slots, layers, max_experts);
    case cache_policy::layer_quota:
        return std::make_unique<layer_quota_policy>(slots, std::max(1u, layers));
    case cache_policy::pin_hot:
        return std::make_unique<pin_hot_policy>(slots, layers, max_experts, std::clamp(spec.pin_percent, 1u, 99u));
    case cache_policy::lru:
        break;
    }
    return std::make_unique<lru_policy>(slots);
}

simulation simulate(replacement_policy& policy, std::uint32_t slots, std::uint32_t layers, std::uint32_t max_experts,
                    std::span<const expert_access> trace, std::vector<std::size_t>* reads) {
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
    for (std::size_t i = 0; i < trace.size(); ++i) {
        const auto& a = trace[i];
        const auto key = key_of(a);
        auto s = slot_of[key];
        if (a.prefetch) {
            if (s != none || (s = take_slot()) == none) {
                continue;
            }
            ++out.prefetch_reads;
            if (reads != nullptr) {
                reads->push_back(i);
            }
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
            if (reads != nullptr) {
                reads->push_back(i);
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
