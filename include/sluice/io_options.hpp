// How Sluice reads model files: the reader backend and its queue sizes (public: part of sluice::model_options).
#pragma once

#include <cstddef>

namespace sluice::io {

/// Which implementation serves the reads.
enum class backend {
    auto_select, ///< io_uring when the kernel allows it, otherwise pread (the reason is logged)
    io_uring,    ///< liburing ring; completions arrive through an eventfd watched by the io_context
    pread,       ///< a small thread pool doing pread(2), posting results back to the io_context
};

/// Settings for `make_reader`.
struct reader_options {
    unsigned queue_depth = 64;     ///< io_uring: reads in the kernel at once; more wait in user space
    std::size_t pread_threads = 4; ///< pread: worker threads
    backend force = backend::auto_select;
};

} // namespace sluice::io
