// A routing replay's reads against the model file, burst by burst, timed.
#include "runtime/engine/disk_probe.hpp"

#include "io/dma_buffer.hpp"
#include "io/huge_pages.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

namespace sluice {
namespace {

constexpr std::uint64_t page = 4096;

/// The aligned read range of expert `e`'s slab `s` into `dest` (nullopt when the model has no such slab or its
/// range runs past the end of its file).
std::optional<io::read_request> slab_range(const gguf::model_files& files, const experts::expert_slab& s,
                                           std::uint32_t e, std::byte* dest) {
    const auto parts = files.parts();
    if (s.bytes == 0 || s.split >= parts.size()) {
        return std::nullopt;
    }
    const auto& f = parts[s.split].file;
    const std::uint64_t start = s.offset + e * s.bytes;
    const std::uint64_t lo = start & ~(page - 1);
    const std::uint64_t len = experts::expert_layout::aligned_extent(start, s.bytes);
    if (lo + len > f.size()) {
        return std::nullopt;
    }
    return io::read_request{&f, lo, std::span<std::byte>(dest, len)};
}

} // namespace

boost::asio::awaitable<result<pattern_probe_result>>
probe_read_pattern(io::reader& reader, const gguf::model_files& files, const experts::expert_layout& layout,
                   const read_pattern& pattern, std::chrono::milliseconds duration) {
    if (pattern.burst_ends.empty()) {
        co_return make_error(std::errc::invalid_argument, "disk probe: the replay reads nothing");
    }
    std::size_t widest = 0; // the most experts of one burst: one slot's room each
    for (std::size_t b = 0, begin = 0; b < pattern.burst_ends.size(); begin = pattern.burst_ends[b++]) {
        widest = std::max(widest, pattern.burst_ends[b] - begin);
    }
    for (const auto& r : pattern.reads) {
        if (r.layer >= layout.layers.size() || r.expert < 0 ||
            static_cast<std::uint32_t>(r.expert) >= layout.layers[r.layer].n_expert) {
            co_return make_error(std::errc::invalid_argument, "disk probe: expert " + std::to_string(r.expert) +
                                                                  " of layer " + std::to_string(r.layer) +
                                                                  " is not in the model");
        }
    }
    io::dma_buffer buffer(widest * layout.slot_bytes);
    buffer.advise_huge_pages();
    buffer.populate();
    std::vector<io::read_request> requests;
    pattern_probe_result out;
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const auto deadline = t0 + duration;
    double burst_s = 0;
    std::uint64_t reads = 0;
    std::size_t b = 0;
    do {
        // Burst b: every slab of each of its experts, each expert in a slot-sized region of its own.
        const std::size_t begin = b == 0 ? 0 : pattern.burst_ends[b - 1];
        requests.clear();
        for (std::size_t i = begin; i < pattern.burst_ends[b]; ++i) {
            const auto& r = pattern.reads[i];
            std::byte* at = buffer.data() + (i - begin) * layout.slot_bytes;
            for (const auto& s : layout.layers[r.layer].slabs) {
                if (auto req = slab_range(files, s, static_cast<std::uint32_t>(r.expert), at)) {
                    requests.push_back(*req);
                    at += experts::expert_layout::region_bytes(s.bytes);
                }
            }
        }
        const auto b0 = clock::now();
        auto results = co_await reader.read_batch(requests);
        burst_s += std::chrono::duration<double>(clock::now() - b0).count();
        for (std::size_t i = 0; i < results.size(); ++i) {
            if (!results[i]) {
                co_return results[i].error().with_context("disk probe");
            }
            out.bytes += requests[i].dest.size();
        }
        reads += results.size();
        ++out.bursts;
        b = (b + 1) % pattern.burst_ends.size();
    } while (clock::now() < deadline);
    const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
    out.bytes_per_s = seconds > 0 ? static_cast<double>(out.bytes) / seconds : 0.0;
    out.mean_burst_ms = 1000.0 * burst_s / static_cast<double>(out.bursts);
    out.mean_burst_reads = static_cast<double>(reads) / static_cast<double>(out.bursts);
    out.huge_page_share =
        static_cast<double>(io::huge_page_bytes(buffer.data(), buffer.size())) / static_cast<double>(buffer.size());
    co_return out;
}

} // namespace sluice
