// The disk read at the expert cache's own request pattern: a routing replay's reads (routing_plan's
// read_pattern), burst by burst, each burst started at once and awaited before the next, as a decoding token
// misses and reads ahead layer by layer. The planner's estimate uses its rate where a steady stream of uniformly
// random reads (probe_disk_bandwidth) would misstate what the cache gets: the same experts come back, at the
// same distances, and the disk (or whatever caches below O_DIRECT) sees the same request sizes and depths.
#pragma once

#include "io/reader.hpp"
#include "runtime/engine/routing_plan.hpp"
#include "runtime/experts/expert_layout.hpp"
#include "runtime/gguf/model_files.hpp"
#include "sluice/error.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>

namespace sluice {

/// What probe_read_pattern measured.
struct pattern_probe_result {
    double bytes_per_s = 0;      ///< bytes read over the probe's wall time
    double mean_burst_ms = 0;    ///< mean time from a burst's start to its last read's end
    double mean_burst_reads = 0; ///< slab reads per burst
    std::uint64_t bursts = 0;    ///< bursts completed
    std::uint64_t bytes = 0;     ///< bytes read
    double huge_page_share = 0;  ///< the share of the probe's buffer in transparent huge pages, as the cache's pool
};

/// Reads `pattern`'s bursts in order for about `duration` (from its start, again from the start when it ends):
/// every slab of each expert of a burst, at its aligned range, started in one submission and awaited before the
/// next burst. Runs on the reader's executor. Errors: an empty pattern, an expert outside `layout`, a failed read
/// (with "disk probe" context).
boost::asio::awaitable<result<pattern_probe_result>>
probe_read_pattern(io::reader& reader, const gguf::model_files& files, const experts::expert_layout& layout,
                   const read_pattern& pattern, std::chrono::milliseconds duration);

} // namespace sluice
