// Stop strings: the streaming matcher (stop_strings.hpp states what is emitted and when).
#include "runtime/generate/stop_strings.hpp"

#include <algorithm>
#include <utility>

namespace sluice::runtime {

result<void> validate_stops(const std::vector<std::string>& stops) {
    for (std::size_t i = 0; i < stops.size(); ++i) {
        if (stops[i].empty())
            return make_error(std::errc::invalid_argument, "stop[" + std::to_string(i) + "] must not be empty");
    }
    return {};
}

stop_matcher::stop_matcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
    for (const auto& s : stops_)
        longest_ = std::max(longest_, s.size());
}

std::size_t stop_matcher::first_full_match() const {
    std::size_t best = std::string::npos;
    for (const auto& s : stops_)
        best = std::min(best, held_.find(s));
    return best;
}

std::size_t stop_matcher::first_partial_match() const {
    // The earliest position whose suffix is a proper prefix of some stop string: a match could start there
    // and end in text not received yet. Only the last longest_ - 1 positions can qualify.
    const std::size_t n = held_.size();
    const std::size_t from = n >= longest_ ? n - longest_ + 1 : 0;
    for (std::size_t j = from; j < n; ++j) {
        const std::string_view tail = std::string_view(held_).substr(j);
        for (const auto& s : stops_) {
            if (s.size() > tail.size() && std::string_view(s).starts_with(tail))
                return j;
        }
    }
    return std::string::npos;
}

void stop_matcher::stop_at(std::size_t at) {
    stopped_ = true;
    for (const auto& s : stops_) {
        if (held_.compare(at, s.size(), s) == 0) {
            matched_ = s;
            return;
        }
    }
}

stop_matcher::step stop_matcher::push(std::string_view piece) {
    if (stopped_)
        return step{{}, true};
    if (stops_.empty())
        return step{std::string(piece), false};
    held_ += piece;
    const std::size_t full = first_full_match();
    const std::size_t partial = first_partial_match();
    if (full != std::string::npos && (partial == std::string::npos || full <= partial)) {
        // No earlier-starting stop string can still complete: this one wins.
        step out{held_.substr(0, full), true};
        stop_at(full);
        held_.clear();
        return out;
    }
    // Everything before the earliest possible match start is safe; hold the rest (a complete match after
    // that start stays held until the earlier candidate resolves).
    const std::size_t keep_from = std::min(partial, held_.size());
    step out{held_.substr(0, keep_from), false};
    held_.erase(0, keep_from);
    return out;
}

std::string stop_matcher::flush() {
    if (stopped_)
        return {};
    const std::size_t full = first_full_match();
    std::string out = full == std::string::npos ? std::move(held_) : held_.substr(0, full);
    if (full != std::string::npos) {
        stop_at(full);
    }
    held_.clear();
    return out;
}

} // namespace sluice::runtime
