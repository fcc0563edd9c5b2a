// The loading bar of `run`, `bench`, `perplexity` and `serve`: redrawn in place on stderr when stderr is a
// terminal (nothing otherwise), and always ended with a newline so that what follows starts on its own line.
#pragma once

#include "runtime/engine/model.hpp"

#include <memory>

namespace sluice::cli {

/// One bar for one load. `callback()` goes to model::load; `finish()` after the load (success or not) draws
/// 100% when it succeeded and ends the line. Not thread-safe (the load reports on one executor).
class progress_bar {
public:
    progress_bar();
    /// The callback for model::load; empty when stderr is not a terminal.
    load_progress callback();
    /// Ends the bar's line (drawing 100% first when `complete`); does nothing if nothing was drawn.
    void finish(bool complete);

private:
    struct state;
    std::shared_ptr<state> state_;
};

} // namespace sluice::cli
