// Sequential byte sources the GGUF parser reads from: an in-memory span, or a file read in buffered chunks.
#pragma once

#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace sluice::gguf {

/// A forward-only byte stream of known total size. Not thread-safe.
class byte_source {
public:
    virtual ~byte_source() = default;
    /// Fills `dest` entirely from the current position and advances. Fails when fewer than `dest.size()`
    /// bytes remain or the underlying read fails; the stream is then unusable.
    virtual result<void> read(std::span<std::byte> dest) = 0;
    /// Bytes consumed so far.
    [[nodiscard]] virtual std::uint64_t position() const noexcept = 0;
    /// Total size of the stream in bytes.
    [[nodiscard]] virtual std::uint64_t size() const noexcept = 0;
    /// Bytes left to read.
    [[nodiscard]] std::uint64_t remaining() const noexcept { return size() - position(); }
};

/// Reads from a caller-owned span (the fuzzer and tests). The span must outlive the source.
class span_source final : public byte_source {
public:
    explicit span_source(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}
    result<void> read(std::span<std::byte> dest) override;
    [[nodiscard]] std::uint64_t position() const noexcept override { return pos_; }
    [[nodiscard]] std::uint64_t size() const noexcept override { return bytes_.size(); }

private:
    std::span<const std::byte> bytes_;
    std::size_t pos_ = 0;
};

/// Reads a file with pread in chunks of `chunk_bytes`: a one-time load step for headers, never for tensor
/// data. Owns its descriptor.
class file_source final : public byte_source {
public:
    /// Opens `path` read-only. Errors name the path and the errno text.
    static result<std::unique_ptr<file_source>> open(const std::filesystem::path& path,
                                                     std::size_t chunk_bytes = std::size_t{1} << 20);
    ~file_source() override;
    file_source(const file_source&) = delete;
    file_source& operator=(const file_source&) = delete;

    result<void> read(std::span<std::byte> dest) override;
    [[nodiscard]] std::uint64_t position() const noexcept override { return pos_; }
    [[nodiscard]] std::uint64_t size() const noexcept override { return size_; }

private:
    file_source(int fd, std::uint64_t size, std::size_t chunk_bytes);
    result<void> refill();

    int fd_;
    std::uint64_t size_;
    std::uint64_t pos_ = 0;        ///< logical position
    std::uint64_t buf_offset_ = 0; ///< file offset of buf_[0]
    std::size_t buf_len_ = 0;      ///< valid bytes in buf_
    std::vector<std::byte> buf_;
};

/// Error for reading past the end: "unexpected end of file at offset X (need N bytes, M left)".
error end_of_data_error(std::uint64_t offset, std::uint64_t need, std::uint64_t left);

} // namespace sluice::gguf
