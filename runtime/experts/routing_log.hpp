// Routing recorded and replayed by the forward pass. A model given a file to record to (model::set_routing) writes,
// for every token and layer, the experts its router chose, their weights and the predictions for the next layer and
// the one after; one given a recording computes its router as usual, then uses the recording's experts, weights and
// predictions instead, so which experts are read and applied follows the recording on any file of the same
// geometry. Both at once record what was replayed. The file format is in routing_trace.hpp and docs/ROUTING.md.
#pragma once

#include "runtime/experts/routing_trace.hpp"

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

namespace sluice::experts {

class routing_log;

/// One forward pass's routing of the batch in progress (each forward runner owns one; see routing_log).
struct routing_batch {
    routing_log* log = nullptr;
    std::uint32_t sequence = 0;     ///< this forward pass's sequence number in the recording
    std::uint32_t first_pos = 0;    ///< cache position of the batch's first token
    std::uint32_t n_tokens = 0;     ///< tokens of the batch
    std::uint64_t replay_start = 0; ///< recorded token replayed for the batch's first token
    std::vector<std::uint16_t> ids, predicted, predicted2; ///< the batch's routing to record, [token][layer][top_k]
    std::vector<float> weights;
};

/// Records routing to a file, replays a recording, or both. Thread-safe: forward passes of several sequences may
/// share one (a recording then interleaves their batches, each token tagged with its sequence).
class routing_log {
public:
    /// Opens what the options name for a model of `geometry` named `model_name`: `replay_from` is read and checked
    /// (refused when its geometry differs: "recording of 2 layers x 8 experts, top-2 does not fit this model's
    /// 4 layers x 8 experts, top-2"), `record_to` created. Either path may be empty, not both.
    static result<std::unique_ptr<routing_log>> open(const std::filesystem::path& record_to,
                                                     const std::filesystem::path& replay_from,
                                                     routing_geometry geometry, std::string model_name);
    ~routing_log();

    [[nodiscard]] const routing_geometry& geometry() const noexcept { return geometry_; }
    [[nodiscard]] bool records() const noexcept { return writer_.has_value(); }
    [[nodiscard]] bool replays() const noexcept { return replay_.has_value(); }
    /// Tokens replayed so far (past the recording's end the replay starts over from its first token).
    [[nodiscard]] std::uint64_t replayed() const noexcept { return replayed_.load(std::memory_order_relaxed); }
    /// Tokens recorded so far.
    [[nodiscard]] std::uint64_t recorded() const;

    /// A forward pass of batches up to `max_batch` tokens starts using the log: sizes `b` and gives it a
    /// sequence number.
    void attach(routing_batch& b, std::uint32_t max_batch);
    /// A batch of `n_tokens` at cache position `first_pos` starts.
    void begin(routing_batch& b, std::uint32_t first_pos, std::uint32_t n_tokens);
    /// Layer `layer` routed the batch: `ids` and `weights` ([token][top_k]) are its choice, `predicted` the next
    /// layer's predicted experts when `has_prediction` (-1: none for that entry), `predicted2` those of the layer
    /// after when `has_prediction2`. A replay overwrites all four with the recording's (and the flags with whether
    /// the recording predicted; a version-1 recording predicts nothing two layers ahead); a recording keeps a copy.
    void on_layer(routing_batch& b, std::uint32_t layer, std::span<std::int32_t> ids, std::span<float> weights,
                  std::span<std::int32_t> predicted, bool& has_prediction, std::span<std::int32_t> predicted2,
                  bool& has_prediction2) const;
    /// The batch went through every layer: a recording appends its tokens to the file. Errors name the file.
    result<void> end(routing_batch& b);

private:
    explicit routing_log(routing_geometry g) : geometry_(g) {}
    routing_geometry geometry_;
    std::optional<routing_trace> replay_;
    std::atomic<std::uint64_t> replayed_{0};
    std::atomic<std::uint32_t> sequences_{0};
    mutable std::mutex write_mutex_;
    std::optional<routing_file_writer> writer_;
};

} // namespace sluice::experts
