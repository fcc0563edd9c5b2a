// Allocation and ownership transfer for io::dma_buffer.
#include "io/dma_buffer.hpp"
#include "io/huge_pages.hpp"

#include <cstdint>
#include <cstdio>
#include <new>
#include <utility>

#include <sys/mman.h>

namespace sluice::io {

dma_buffer::dma_buffer(std::size_t size) : size_(round_up(size)) {
    if (size_ != 0) {
        data_ = static_cast<std::byte*>(::operator new (size_, std::align_val_t{alignment}));
    }
}

dma_buffer::~dma_buffer() {
    release();
}

dma_buffer::dma_buffer(dma_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

dma_buffer& dma_buffer::operator=(dma_buffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void dma_buffer::advise_huge_pages() noexcept {
    constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
    const auto begin = (reinterpret_cast<std::uintptr_t>(data_) + huge - 1) & ~(huge - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data_) + size_) & ~(huge - 1);
    if (data_ != nullptr && end > begin) {
        ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
}

void dma_buffer::populate() noexcept {
#ifndef MADV_POPULATE_WRITE
    constexpr int MADV_POPULATE_WRITE = 23; // Linux 5.14
#endif
    if (data_ == nullptr) {
        return;
    }
    if (::madvise(data_, size_, MADV_POPULATE_WRITE) == 0) {
        return;
    }
    for (std::size_t i = 0; i < size_; i += alignment) {
        reinterpret_cast<volatile std::byte*>(data_)[i] = std::byte{0};
    }
}

std::size_t huge_page_bytes(const void* data, std::size_t size) noexcept {
    if (data == nullptr) {
        return 0;
    }
    std::FILE* f = std::fopen("/proc/self/smaps", "re");
    if (f == nullptr) {
        return 0;
    }
    const auto lo = reinterpret_cast<std::uintptr_t>(data);
    const auto hi = lo + size;
    std::size_t total = 0;
    bool inside = false; // the current mapping lies within the buffer
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned long start = 0, end = 0, kb = 0;
        if (std::sscanf(line, "%lx-%lx ", &start, &end) == 2) { // a mapping's first line; field lines fail here
            inside = start >= lo && end <= hi;
        } else if (inside && std::sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) {
            total += static_cast<std::size_t>(kb) * 1024;
        }
    }
    std::fclose(f);
    return total;
}

void dma_buffer::release() noexcept {
    if (data_ != nullptr) {
        ::operator delete (data_, size_, std::align_val_t{alignment});
        data_ = nullptr;
        size_ = 0;
    }
}

} // namespace sluice::io
