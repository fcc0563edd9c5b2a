// What every connection of one server shares: options, the model once loaded, and the generation slots.
// Used from the io_context's one thread only, except render_pool, whose threads render chat templates.
#pragma once

#include "base/async_event.hpp"
#include "runtime/engine/model.hpp"
#include "server/metrics.hpp"
#include "server/scheduler.hpp"
#include "server/server_options.hpp"

#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

namespace sluice::server {

struct server_state {
    server_state(server_options opts, boost::asio::any_io_executor executor)
        : options(std::move(opts)), slots(options.parallel, options.queue), seeds(std::random_device{}()),
          stop_requested(std::move(executor)) {}

    server_options options;
    std::shared_ptr<model> loaded; ///< null while the model loads
    std::string model_name;        ///< the served model's id (file name without .gguf)
    std::int64_t created = 0;      ///< when loading finished (seconds since the epoch)
    scheduler slots;
    std::mt19937_64 seeds;  ///< seeds of requests that bring none
    server_metrics metrics; ///< GET /metrics
    /// Shutdown (SIGTERM): no new requests; running generations may finish until stop_deadline, then they
    /// are ended with a final event (finish_reason "shutdown").
    bool stopping = false;
    std::chrono::steady_clock::time_point stop_deadline;
    async_event stop_requested; ///< set when `stopping` becomes true
    /// Renders chat templates (a model file's template is untrusted: its sandbox bounds a render at
    /// template_limits::max_time, and off the event loop a slow one delays nobody's tokens or /health).
    boost::asio::thread_pool render_pool{2};
};

} // namespace sluice::server
