// The batch engine's limit on a step's prediction: over many tokens, only the experts most of them predicted are
// read ahead. One definition, used by the forward pass (runtime/models/moe_block.cpp) and by the planner's replay
// of a batch (runtime/engine/routing_plan.cpp), so that the replay reads what the runtime reads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace sluice::experts {

/// `ids`, sorted ascending with repeats (one entry per token that predicted the expert), becomes its distinct
/// ids in ascending order; over `limit` of them (0: no limit) only the `limit` with the most entries stay, ties
/// to the lower id. `votes` is scratch: (minus the count, id) per distinct id.
template <class Id, class Count>
void keep_most_voted(std::vector<Id>& ids, std::size_t limit, std::vector<std::pair<Count, Id>>& votes) {
    if (limit == 0 || ids.size() <= limit) {
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        return;
    }
    votes.clear();
    for (std::size_t i = 0; i < ids.size();) {
        std::size_t j = i;
        while (j < ids.size() && ids[j] == ids[i]) {
            ++j;
        }
        votes.emplace_back(-static_cast<Count>(j - i), ids[i]);
        i = j;
    }
    const std::size_t keep = std::min(limit, votes.size());
    std::partial_sort(votes.begin(), votes.begin() + static_cast<std::ptrdiff_t>(keep), votes.end());
    ids.clear();
    for (std::size_t i = 0; i < keep; ++i) {
        ids.push_back(votes[i].second);
    }
    std::sort(ids.begin(), ids.end());
}

} // namespace sluice::experts
