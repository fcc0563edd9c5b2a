// Opening files for io::reader: O_DIRECT first, buffered when the filesystem refuses it.
#include "io/file.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace sluice::io {

result<file> file::open(std::string path, open_mode mode) {
    bool direct = mode == open_mode::direct_if_supported;
    int fd = direct ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT) : -1;
    if (!direct) {
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } else if (fd < 0 && errno == EINVAL) {
        // The filesystem does not support O_DIRECT: fall back to buffered reads.
        direct = false;
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            spdlog::debug("{}: O_DIRECT not supported by the filesystem, reading through the page cache", path);
        }
    }
    if (fd < 0) {
        return make_errno_error(errno, path + ": open failed");
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return make_errno_error(err, path + ": stat failed");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(std::errc::invalid_argument, path + ": not a regular file");
    }
    return file(fd, std::move(path), static_cast<std::uint64_t>(st.st_size), direct);
}

file::~file() {
    close();
}

file::file(file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), size_(std::exchange(other.size_, 0)),
      direct_(std::exchange(other.direct_, false)) {}

file& file::operator=(file&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = std::exchange(other.fd_, -1);
        path_ = std::move(other.path_);
        size_ = std::exchange(other.size_, 0);
        direct_ = std::exchange(other.direct_, false);
    }
    return *this;
}

void file::close() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

result<std::uint64_t> file::current_size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        return make_errno_error(errno, path_ + ": stat failed");
    }
    return static_cast<std::uint64_t>(st.st_size);
}

} // namespace sluice::io
