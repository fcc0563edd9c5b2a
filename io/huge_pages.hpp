// How much of a memory range the kernel backs with transparent huge pages.
#pragma once

#include <cstddef>

namespace sluice::io {

/// Bytes of [data, data + size) the kernel backs with transparent huge pages now: the AnonHugePages of the
/// mappings lying wholly inside the range, from /proc/self/smaps (0 when that cannot be read). Madvising part of a
/// mapping splits it, so a dma_buffer's advised 2 MiB pages are counted. On a virtio disk a read into 4 KiB pages
/// can get half the rate of one into huge pages (docs/PERFORMANCE.md, the planner section, finding B).
[[nodiscard]] std::size_t huge_page_bytes(const void* data, std::size_t size) noexcept;

} // namespace sluice::io
