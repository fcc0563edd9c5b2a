// Sequential byte sources: an in-memory span and a chunked pread reader over a file.
#include "runtime/gguf/byte_source.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice::gguf {

error end_of_data_error(std::uint64_t offset, std::uint64_t need, std::uint64_t left) {
    return make_error(std::errc::bad_message, "unexpected end of file at offset " + std::to_string(offset) + " (need " +
                                                  std::to_string(need) + " bytes, " + std::to_string(left) + " left)");
}

result<void> span_source::read(std::span<std::byte> dest) {
    if (dest.size() > bytes_.size() - pos_) {
        return end_of_data_error(pos_, dest.size(), bytes_.size() - pos_);
    }
    if (!dest.empty()) {
        std::memcpy(dest.data(), bytes_.data() + pos_, dest.size());
    }
    pos_ += dest.size();
    return {};
}

result<std::unique_ptr<file_source>> file_source::open(const std::filesystem::path& path, std::size_t chunk_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return make_errno_error(errno, "cannot open " + path.string());
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return make_errno_error(err, "cannot stat " + path.string());
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(std::errc::invalid_argument, path.string() + ": not a regular file");
    }
    return std::unique_ptr<file_source>(
        new file_source(fd, static_cast<std::uint64_t>(st.st_size), chunk_bytes == 0 ? 4096 : chunk_bytes));
}

file_source::file_source(int fd, std::uint64_t size, std::size_t chunk_bytes)
    : fd_(fd), size_(size), buf_(chunk_bytes) {}

file_source::~file_source() {
    ::close(fd_);
}

result<void> file_source::refill() {
    buf_offset_ = pos_;
    buf_len_ = 0;
    const std::uint64_t want = std::min<std::uint64_t>(buf_.size(), size_ - pos_);
    while (buf_len_ < want) {
        const ssize_t n =
            ::pread(fd_, buf_.data() + buf_len_, want - buf_len_, static_cast<off_t>(buf_offset_ + buf_len_));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return make_errno_error(errno, "read failed at offset " + std::to_string(buf_offset_ + buf_len_));
        }
        if (n == 0) {
            return make_error(std::errc::bad_message,
                              "file shrank while reading at offset " + std::to_string(buf_offset_ + buf_len_));
        }
        buf_len_ += static_cast<std::size_t>(n);
    }
    return {};
}

result<void> file_source::read(std::span<std::byte> dest) {
    if (dest.size() > size_ - pos_) {
        return end_of_data_error(pos_, dest.size(), size_ - pos_);
    }
    std::size_t done = 0;
    while (done < dest.size()) {
        if (pos_ < buf_offset_ || pos_ >= buf_offset_ + buf_len_) {
            if (auto r = refill(); !r) {
                return r;
            }
        }
        const auto in_buf = static_cast<std::size_t>(pos_ - buf_offset_);
        const std::size_t n = std::min(dest.size() - done, buf_len_ - in_buf);
        std::memcpy(dest.data() + done, buf_.data() + in_buf, n);
        done += n;
        pos_ += n;
    }
    return {};
}

} // namespace sluice::gguf
