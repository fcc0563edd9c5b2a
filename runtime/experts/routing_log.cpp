// Recording and replaying routing: the per-batch copy a recording appends, the cursor a replay walks.
#include "runtime/experts/routing_log.hpp"

#include <algorithm>

namespace sluice::experts {

result<std::unique_ptr<routing_log>> routing_log::open(const std::filesystem::path& record_to,
                                                       const std::filesystem::path& replay_from,
                                                       routing_geometry geometry, std::string model_name) {
    if (geometry.experts == 0 || geometry.top_k == 0) {
        return make_error(std::errc::invalid_argument, "the model has no routed experts: no routing to record or replay");
    }
    if (geometry.experts >= no_expert || geometry.layers > routing_max_layers || geometry.top_k > routing_max_top_k) {
        return make_error(std::errc::invalid_argument,
                          "the model's routing (" + to_string(geometry) + ") is past what a recording can hold");
    }
    std::unique_ptr<routing_log> log(new routing_log(geometry));
    if (!replay_from.empty()) {
        auto trace = routing_trace::load(replay_from);
        if (!trace) {
            return trace.error();
        }
        if (trace->geometry() != geometry) {
            return make_error(std::errc::invalid_argument,
                              replay_from.string() + ": recording of " + to_string(trace->geometry()) +
                                  " (model \"" + trace->header().model_name + "\") does not fit this model's " +
                                  to_string(geometry));
        }
        if (trace->size() == 0) {
            return make_error(std::errc::invalid_argument, replay_from.string() + ": the recording holds no tokens");
        }
        log->replay_.emplace(std::move(*trace));
    }
    if (!record_to.empty()) {
        auto w = routing_file_writer::create(record_to, routing_header{geometry, 0, std::move(model_name)});
        if (!w) {
            return w.error();
        }
        log->writer_.emplace(std::move(*w));
    }
    return log;
}

routing_log::~routing_log() = default;

std::uint64_t routing_log::recorded() const {
    const std::lock_guard lock(write_mutex_);
    return writer_ ? writer_->tokens() : 0;
}

void routing_log::attach(routing_batch& b, std::uint32_t max_batch) {
    b.log = this;
    b.sequence = sequences_.fetch_add(1, std::memory_order_relaxed);
    const std::size_t n = std::size_t{max_batch} * geometry_.layers * geometry_.top_k;
    if (writer_) {
        b.ids.assign(n, no_expert);
        b.predicted.assign(n, no_expert);
        b.predicted2.assign(n, no_expert);
        b.weights.assign(n, 0.0f);
    }
}

void routing_log::begin(routing_batch& b, std::uint32_t first_pos, std::uint32_t n_tokens) {
    b.first_pos = first_pos;
    b.n_tokens = n_tokens;
    if (replay_) {
        b.replay_start = replayed_.fetch_add(n_tokens, std::memory_order_relaxed) % replay_->size();
    }
    if (writer_) {
        const std::size_t n = std::size_t{n_tokens} * geometry_.layers * geometry_.top_k;
        std::fill_n(b.ids.begin(), n, no_expert);
        std::fill_n(b.predicted.begin(), n, no_expert);
        std::fill_n(b.predicted2.begin(), n, no_expert);
        std::fill_n(b.weights.begin(), n, 0.0f);
    }
}

void routing_log::on_layer(routing_batch& b, std::uint32_t layer, std::span<std::int32_t> ids, std::span<float> weights,
                           std::span<std::int32_t> predicted, bool& has_prediction, std::span<std::int32_t> predicted2,
                           bool& has_prediction2) const {
    const std::size_t k = geometry_.top_k;
    if (replay_) {
        bool any_prediction = false, any_prediction2 = false;
        for (std::size_t i = 0; i < b.n_tokens; ++i) {
            const auto t = (b.replay_start + i) % replay_->size();
            const auto rec_ids = replay_->experts(t, layer);
            const auto row = static_cast<std::ptrdiff_t>(i * k);
            if (rec_ids[0] == no_expert) { // the recording routed nothing here: this model's own choice stays
                if (!has_prediction) {
                    std::fill_n(predicted.begin() + row, k, -1);
                }
                if (!has_prediction2) {
                    std::fill_n(predicted2.begin() + row, k, -1);
                }
                any_prediction = any_prediction || has_prediction;
                any_prediction2 = any_prediction2 || has_prediction2;
                continue;
            }
            const auto rec_w = replay_->weights(t, layer);
            const auto rec_p = replay_->predicted(t, layer);
            const auto rec_p2 = replay_->predicted2(t, layer);
            for (std::size_t j = 0; j < k; ++j) {
                ids[i * k + j] = rec_ids[j];
                weights[i * k + j] = rec_w[j];
                predicted[i * k + j] = rec_p[j] == no_expert ? -1 : rec_p[j];
                predicted2[i * k + j] = rec_p2[j] == no_expert ? -1 : rec_p2[j];
            }
            any_prediction = any_prediction || rec_p[0] != no_expert;
            any_prediction2 = any_prediction2 || rec_p2[0] != no_expert;
        }
        has_prediction = any_prediction;
        has_prediction2 = any_prediction2;
    }
    if (writer_) {
        for (std::size_t i = 0; i < b.n_tokens; ++i) {
            const std::size_t at = (i * geometry_.layers + layer) * k;
            for (std::size_t j = 0; j < k; ++j) {
                b.ids[at + j] = static_cast<std::uint16_t>(ids[i * k + j]);
                b.weights[at + j] = weights[i * k + j];
                const auto p = predicted[i * k + j];
                b.predicted[at + j] = has_prediction && p >= 0 ? static_cast<std::uint16_t>(p) : no_expert;
                const auto p2 = predicted2[i * k + j];
                b.predicted2[at + j] = has_prediction2 && p2 >= 0 ? static_cast<std::uint16_t>(p2) : no_expert;
            }
        }
    }
}

result<void> routing_log::end(routing_batch& b) {
    if (!writer_) {
        return {};
    }
    const std::size_t per = std::size_t{geometry_.layers} * geometry_.top_k;
    std::vector<std::byte> records;
    records.reserve(b.n_tokens * routing_record_bytes(geometry_));
    for (std::size_t i = 0; i < b.n_tokens; ++i) {
        encode_routing_record(geometry_, b.sequence, b.first_pos + static_cast<std::uint32_t>(i),
                              std::span(b.ids).subspan(i * per, per), std::span(b.weights).subspan(i * per, per),
                              std::span(b.predicted).subspan(i * per, per),
                              std::span(b.predicted2).subspan(i * per, per), records);
    }
    const std::lock_guard lock(write_mutex_);
    return writer_->append(records, b.n_tokens);
}

} // namespace sluice::experts
