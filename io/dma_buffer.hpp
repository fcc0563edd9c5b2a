// io::dma_buffer: a move-only, 4 KiB-aligned byte buffer that O_DIRECT reads can land in.
#pragma once

#include <cstddef>
#include <span>

namespace sluice::io {

/// A heap buffer whose address and size are multiples of `alignment`, as O_DIRECT requires.
/// Move-only; the contents are left uninitialised. Not thread-safe (like any plain container).
class dma_buffer {
public:
    /// The address and size granularity of every buffer.
    static constexpr std::size_t alignment = 4096;

    /// An empty buffer (data() is null, size() is 0).
    dma_buffer() noexcept = default;
    /// Allocates at least `size` bytes, rounded up to a multiple of `alignment`. Throws std::bad_alloc.
    explicit dma_buffer(std::size_t size);
    ~dma_buffer();

    dma_buffer(dma_buffer&& other) noexcept;
    dma_buffer& operator=(dma_buffer&& other) noexcept;
    dma_buffer(const dma_buffer&) = delete;
    dma_buffer& operator=(const dma_buffer&) = delete;

    /// Rounds `n` up to a multiple of `alignment`.
    static constexpr std::size_t round_up(std::size_t n) noexcept { return (n + alignment - 1) & ~(alignment - 1); }

    [[nodiscard]] std::byte* data() noexcept { return data_; }
    [[nodiscard]] const std::byte* data() const noexcept { return data_; }
    /// The usable size: the asked size rounded up to `alignment`.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::span<std::byte> span() noexcept { return {data_, size_}; }
    [[nodiscard]] std::span<const std::byte> span() const noexcept { return {data_, size_}; }
    /// Asks the kernel for transparent huge pages on the whole 2 MiB pages inside the buffer (a hint: failure
    /// is harmless). O_DIRECT into fresh memory faults every page in, and 4 KiB faults can cost more than the
    /// disk.
    void advise_huge_pages() noexcept;
    /// Faults every page of the buffer in now (MADV_POPULATE_WRITE, or touching each page where the kernel
    /// lacks it), so first use pays no page faults: the kernel zeroes each page either way, and on a VM whose
    /// host backs memory lazily that costs more than reading the same bytes from disk.
    void populate() noexcept;

private:
    void release() noexcept;

    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace sluice::io
