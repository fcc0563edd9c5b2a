// What every connection of one server shares: options, the model once loaded, and the generation slots.
// Used from the io_context's one thread only, except render_pool, whose threads render chat templates.
#pragma once

#include "runtime/engine/model.hpp"
#include "server/metrics.hpp"
#include "server/scheduler.hpp"
#include "server/server_options.hpp"

#include <boost/asio/thread_pool.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <string>

namespace sluice::server {

struct server_state {
    explicit server_state(server_options opts)
        : options(std::move(opts)), slots(options.parallel, options.queue), seeds(std::random_device{}()) {}

    server_options options;
    std::shared_ptr<model> loaded; ///< null while the model loads
    std::string model_name;        ///< the served model's id (file name without .gguf)
    std::int64_t created = 0;      ///< when loading finished (seconds since the epoch)
    scheduler slots;
    std::mt19937_64 seeds;  ///< seeds of requests that bring none
    server_metrics metrics; ///< GET /metrics
    /// Renders chat templates (a model file's template is untrusted: its sandbox bounds a render at
    /// template_limits::max_time, and off the event loop a slow one delays nobody's tokens or /health).
    boost::asio::thread_pool render_pool{2};
};

} // namespace sluice::server
