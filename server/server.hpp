// sluice::server::run_server: binds, starts answering (503 "loading" on /health), loads the model, and serves
// until SIGINT or SIGTERM, all on one io_context thread; the model's compute runs on its own pool.
#pragma once

#include "server/server_options.hpp"

namespace sluice::server {

/// Runs the server; returns the process exit status: 0 after a signal, 1 when binding or loading fails
/// (with a message on stderr). Prints "sluice serve: listening on http://HOST:PORT" on stderr once bound
/// (the real port when `options.port` is 0), then a line when the model is loaded.
int run_server(const server_options& options);

} // namespace sluice::server
