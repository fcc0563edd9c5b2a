// io::file: a read-only file descriptor opened with O_DIRECT where the filesystem allows it.
#pragma once

#include "sluice/error.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace sluice::io {

/// How `file::open` treats the page cache.
enum class open_mode {
    direct_if_supported, ///< O_DIRECT, or buffered when the filesystem refuses it
    buffered,            ///< always through the page cache (small files, tests of the buffered path)
};

/// An open, read-only regular file. Move-only; closes its descriptor on destruction.
/// The size is taken once at open; reads past the real end of the file fail with an error, not a crash.
class file {
public:
    /// Opens `path` read-only with O_DIRECT; when the filesystem refuses O_DIRECT (older tmpfs, some FUSE
    /// mounts) opens it without and records that in `direct()`. Errors name the path ("PATH: open failed: ...").
    static result<file> open(std::string path, open_mode mode = open_mode::direct_if_supported);

    file() noexcept = default;
    ~file();
    file(file&& other) noexcept;
    file& operator=(file&& other) noexcept;
    file(const file&) = delete;
    file& operator=(const file&) = delete;

    /// The descriptor, or -1 for a default-constructed or moved-from file.
    [[nodiscard]] int fd() const noexcept { return fd_; }
    /// The size in bytes at the time of `open`.
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    /// The size in bytes now (fstat of the open descriptor: a truncation of the file shows, a replacement of
    /// its path does not, as reads still go to the file that was opened).
    [[nodiscard]] result<std::uint64_t> current_size() const;
    /// The path as given to `open`.
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// True when the descriptor bypasses the page cache; reads then need 4 KiB alignment (the readers handle it).
    [[nodiscard]] bool direct() const noexcept { return direct_; }

private:
    file(int fd, std::string path, std::uint64_t size, bool direct) noexcept
        : fd_(fd), path_(std::move(path)), size_(size), direct_(direct) {}
    void close() noexcept;

    int fd_ = -1;
    std::string path_;
    std::uint64_t size_ = 0;
    bool direct_ = false;
};

} // namespace sluice::io
