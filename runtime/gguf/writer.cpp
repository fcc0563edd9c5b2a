// Streaming GGUF writer: plans the parts, writes each header, then tensor data with alignment padding.
#include "runtime/gguf/writer.hpp"

#include "runtime/gguf/encode.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/try.hpp"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <unistd.h>
#include <unordered_set>

namespace sluice::gguf {

/// A file opened for writing with a user-space buffer; errors name the path.
class writer::sink {
public:
    static result<std::unique_ptr<sink>> create(const std::filesystem::path& path, std::size_t buffer_bytes) {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            return make_errno_error(errno, "cannot create " + path.string());
        }
        return std::unique_ptr<sink>(new sink(fd, path, buffer_bytes));
    }
    ~sink() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    sink(const sink&) = delete;
    sink& operator=(const sink&) = delete;

    result<void> write(std::span<const std::byte> data) {
        while (!data.empty()) {
            const std::size_t n = std::min(data.size(), buf_.size() - used_);
            std::memcpy(buf_.data() + used_, data.data(), n);
            used_ += n;
            written_ += n;
            data = data.subspan(n);
            if (used_ == buf_.size()) {
                SLUICE_GGUF_CHECK(flush());
            }
        }
        return {};
    }

    result<void> pad_to(std::uint64_t alignment) {
        static constexpr std::byte zeros[64] = {};
        std::uint64_t pad = (alignment - written_ % alignment) % alignment;
        while (pad > 0) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(pad, sizeof(zeros)));
            SLUICE_GGUF_CHECK(write({zeros, n}));
            pad -= n;
        }
        return {};
    }

    result<void> close() {
        SLUICE_GGUF_CHECK(flush());
        const int fd = std::exchange(fd_, -1);
        if (::close(fd) != 0) {
            return make_errno_error(errno, "cannot close " + path_.string());
        }
        return {};
    }

private:
    sink(int fd, std::filesystem::path path, std::size_t buffer_bytes)
        : fd_(fd), path_(std::move(path)), buf_(std::max<std::size_t>(buffer_bytes, 4096)) {}

    result<void> flush() {
        std::size_t done = 0;
        while (done < used_) {
            const ssize_t n = ::write(fd_, buf_.data() + done, used_ - done);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                return make_errno_error(errno, "cannot write " + path_.string());
            }
            done += static_cast<std::size_t>(n);
        }
        used_ = 0;
        return {};
    }

    int fd_;
    std::filesystem::path path_;
    std::vector<std::byte> buf_;
    std::size_t used_ = 0;
    std::uint64_t written_ = 0;
};

namespace {

error usage_error(std::string message) {
    return make_error(std::errc::invalid_argument, std::move(message));
}

std::uint64_t align_up(std::uint64_t v, std::uint64_t alignment) {
    return (v + alignment - 1) / alignment * alignment;
}

/// Validates a declared shape and fills in n_dims, ne, n_elements and bytes.
result<void> fill_shape(tensor_info& t, std::span<const std::uint64_t> shape) {
    const std::string context = "tensor " + t.name + ": ";
    if (shape.empty() || shape.size() > max_dims) {
        return usage_error(context + "needs 1 to 4 dimensions, got " + std::to_string(shape.size()));
    }
    t.n_dims = static_cast<std::uint32_t>(shape.size());
    t.n_elements = 1;
    constexpr std::uint64_t limit = std::uint64_t{1} << 62; // leaves room for byte sizes and alignment
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0 || t.n_elements > limit / shape[d]) {
            return usage_error(context + "dimension " + std::to_string(d) + " is 0 or the size overflows");
        }
        t.ne[d] = shape[d];
        t.n_elements *= shape[d];
    }
    const auto& traits = kernels::traits_of(t.type);
    if (t.ne[0] % traits.block_elems != 0) {
        return usage_error(context + "row of " + std::to_string(t.ne[0]) + " values is not a multiple of the " +
                           std::string(traits.name) + " block size " + std::to_string(traits.block_elems));
    }
    const std::uint64_t blocks = t.n_elements / traits.block_elems;
    if (blocks > limit / traits.block_bytes) {
        return usage_error(context + "byte size overflows");
    }
    t.bytes = blocks * traits.block_bytes;
    return {};
}

} // namespace

writer::writer(std::filesystem::path path, writer_options options) : path_(std::move(path)), options_(options) {}
writer::~writer() = default;
writer::writer(writer&&) noexcept = default;
writer& writer::operator=(writer&&) noexcept = default;

const tensor_info* writer::next_tensor() const noexcept {
    return next_ < tensors_.size() ? &tensors_[next_] : nullptr;
}

result<void> writer::fail(error e) {
    state_ = state::failed;
    return e;
}

result<void> writer::add_tensor(std::string name, kernels::quant_type type, std::span<const std::uint64_t> shape) {
    if (state_ != state::declaring) {
        return usage_error("tensor " + name + ": cannot declare tensors after writing started");
    }
    if (name.empty() || !is_valid_utf8(name)) {
        return usage_error("tensor name is empty or not valid UTF-8");
    }
    for (const auto& t : tensors_) {
        if (t.name == name) {
            return usage_error("tensor " + name + ": declared twice");
        }
    }
    tensor_info t;
    t.name = std::move(name);
    t.type = type;
    SLUICE_GGUF_CHECK(fill_shape(t, shape));
    tensors_.push_back(std::move(t));
    return {};
}

result<void> writer::plan_parts() {
    // Assign tensors to parts in order and lay out offsets relative to each part's data section.
    std::uint32_t part = 0;
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;
    for (auto& t : tensors_) {
        const std::uint64_t size = align_up(t.bytes, options_.alignment);
        const bool full_count = options_.max_part_tensors != 0 && count == options_.max_part_tensors;
        const bool full_bytes = options_.max_part_bytes != 0 && count != 0 && bytes + size > options_.max_part_bytes;
        if (full_count || full_bytes) {
            ++part;
            count = 0;
            bytes = 0;
        }
        t.split = part;
        t.offset = bytes;
        bytes += size;
        ++count;
    }
    n_parts_ = part + 1;
    if (n_parts_ > std::numeric_limits<std::uint16_t>::max()) { // split.count is a u16
        return usage_error("output would need " + std::to_string(n_parts_) + " parts (at most 65535)");
    }
    // Encode every header now so each tensor's absolute offset is known before any data is written.
    std::string prefix = path_.string();
    if (prefix.ends_with(".gguf")) {
        prefix.resize(prefix.size() - 5);
    }
    std::size_t first = 0;
    for (std::uint32_t p = 0; p < n_parts_; ++p) {
        paths_.push_back(n_parts_ == 1 ? path_ : split_path(prefix, p + 1, n_parts_));
        std::size_t last = first;
        while (last < tensors_.size() && tensors_[last].split == p) {
            ++last;
        }
        const std::span<const tensor_info> mine(tensors_.data() + first, last - first);
        headers_.push_back(encode_header(part_metadata(p), mine, options_.alignment));
        for (std::size_t i = first; i < last; ++i) {
            tensors_[i].offset += headers_.back().size();
        }
        first = last;
    }
    return {};
}

metadata writer::part_metadata(std::uint32_t part) const {
    metadata m;
    if (part == 0) {
        m = kv_;
    }
    m.erase(keys::alignment);
    m.erase(keys::split_no);
    m.erase(keys::split_count);
    m.erase(keys::split_tensors_count);
    if (options_.alignment != default_alignment) {
        m.set_u32(keys::alignment, options_.alignment);
    }
    if (n_parts_ > 1) {
        m.set_u16(keys::split_no, static_cast<std::uint16_t>(part));
        m.set_u16(keys::split_count, static_cast<std::uint16_t>(n_parts_));
        m.set_i32(keys::split_tensors_count, static_cast<std::int32_t>(tensors_.size()));
    }
    return m;
}

result<void> writer::open_part(std::uint32_t part) {
    if (sink_) {
        SLUICE_GGUF_CHECK(sink_->close());
    }
    SLUICE_GGUF_TRY(sink_, sink::create(paths_[part], options_.buffer_bytes));
    SLUICE_GGUF_CHECK(sink_->write(headers_[part]));
    headers_[part] = {};
    return {};
}

result<void> writer::begin() {
    if (state_ != state::declaring) {
        return state_ == state::writing ? result<void>() : usage_error("writer already finished or failed");
    }
    if (!std::has_single_bit(options_.alignment)) {
        return fail(usage_error("alignment " + std::to_string(options_.alignment) + " is not a power of two"));
    }
    if (tensors_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        return fail(usage_error("too many tensors"));
    }
    state_ = state::writing;
    if (auto r = plan_parts(); !r) {
        return fail(r.error());
    }
    if (auto r = open_part(0); !r) {
        return fail(r.error());
    }
    return {};
}

result<void> writer::finish_tensor() {
    const std::uint32_t part = tensors_[next_].split;
    SLUICE_GGUF_CHECK(sink_->pad_to(options_.alignment));
    ++next_;
    written_ = 0;
    if (next_ < tensors_.size() && tensors_[next_].split != part) {
        SLUICE_GGUF_CHECK(open_part(tensors_[next_].split));
    }
    return {};
}

result<void> writer::append(std::span<const std::byte> data) {
    SLUICE_GGUF_CHECK(begin());
    while (!data.empty()) {
        if (next_ == tensors_.size()) {
            return fail(usage_error(std::to_string(data.size()) + " bytes of data beyond the last tensor"));
        }
        const auto& t = tensors_[next_];
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), t.bytes - written_));
        if (auto r = sink_->write(data.first(n)); !r) {
            return fail(r.error().with_context("tensor " + t.name));
        }
        written_ += n;
        data = data.subspan(n);
        if (written_ == t.bytes) {
            if (auto r = finish_tensor(); !r) {
                return fail(r.error());
            }
        }
    }
    return {};
}

result<void> writer::write_tensor(std::span<const std::byte> data) {
    SLUICE_GGUF_CHECK(begin());
    const auto* t = next_tensor();
    if (t == nullptr || written_ != 0 || data.size() != t->bytes) {
        return usage_error(t == nullptr
                               ? std::string("all tensors were already written")
                               : "tensor " + t->name + ": got " + std::to_string(data.size()) + " bytes, expected " +
                                     std::to_string(t->bytes) + (written_ != 0 ? " (partly appended already)" : ""));
    }
    return append(data);
}

result<void> writer::write_tensor(const chunk_filler& fill, std::size_t chunk_bytes) {
    SLUICE_GGUF_CHECK(begin());
    const auto* t = next_tensor();
    if (t == nullptr || written_ != 0) {
        return usage_error(t == nullptr ? "all tensors were already written"
                                        : "tensor " + t->name + ": partly appended already");
    }
    const std::string name = t->name;
    const std::uint64_t total = t->bytes;
    chunk_.resize(std::max<std::size_t>(chunk_bytes, 1));
    for (std::uint64_t done = 0; done < total;) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_.size(), total - done));
        const std::span<std::byte> chunk(chunk_.data(), n);
        if (auto r = fill(done, chunk); !r) {
            return fail(r.error().with_context("tensor " + name));
        }
        SLUICE_GGUF_CHECK(append(chunk));
        done += n;
    }
    return {};
}

result<std::vector<std::filesystem::path>> writer::finish() {
    SLUICE_GGUF_CHECK(begin());
    if (next_ != tensors_.size()) {
        return usage_error("tensor " + tensors_[next_].name + " was not written (" + std::to_string(next_) + " of " +
                           std::to_string(tensors_.size()) + " tensors complete)");
    }
    if (auto r = sink_->close(); !r) {
        state_ = state::failed;
        return r.error();
    }
    sink_.reset();
    state_ = state::finished;
    return paths_;
}

} // namespace sluice::gguf
