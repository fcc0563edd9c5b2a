// Streaming GGUF writer: metadata and tensor list declared up front, then tensor data one tensor at a time.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/gguf/metadata.hpp"
#include "runtime/gguf/parser.hpp"
#include "runtime/gguf/tensor_info.hpp"
#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sluice::gguf {

/// How a writer lays out its output.
struct writer_options {
    std::uint32_t alignment = default_alignment;     ///< tensor data alignment, a power of two
    std::uint64_t max_part_tensors = 0;              ///< split after this many tensors per file; 0 = no limit
    std::uint64_t max_part_bytes = 0;                ///< split before tensor data exceeds this per file; 0 = no limit
    std::size_t buffer_bytes = std::size_t{4} << 20; ///< output buffer per file
};

/// Produces the bytes of the current tensor from `offset` (within the tensor) into `chunk`.
using chunk_filler = std::function<result<void>(std::uint64_t offset, std::span<std::byte> chunk)>;

/// Writes a GGUF v3 model, one file or NAME-0000N-of-0000M.gguf parts, holding at most one buffer of tensor
/// data in memory (files of any size).
///
/// Use: fill `kv()`, `add_tensor` every tensor, then `write_tensor` (or `append`) their data in the order
/// declared, then `finish`. The writer owns `general.alignment` and the `split.*` keys. Padding to the
/// alignment is written after every tensor. Not thread-safe. A failed write leaves the writer unusable and
/// the output incomplete.
class writer {
public:
    /// `path` is the output file; a split model writes "<path without .gguf>-0000N-of-0000M.gguf" instead.
    explicit writer(std::filesystem::path path, writer_options options = {});
    ~writer();
    writer(writer&&) noexcept;
    writer& operator=(writer&&) noexcept;

    /// The metadata to write (first part). Editable until the first data is written.
    [[nodiscard]] metadata& kv() noexcept { return kv_; }

    /// Declares the next tensor. Errors: empty/non-UTF-8/duplicate name, 0 or more than 4 dims, a zero dim,
    /// a row not a multiple of the type's block size, a size that overflows, or data already being written.
    result<void> add_tensor(std::string name, kernels::quant_type type, std::span<const std::uint64_t> shape);
    result<void> add_tensor(std::string name, kernels::quant_type type, std::initializer_list<std::uint64_t> shape) {
        return add_tensor(std::move(name), type, std::span<const std::uint64_t>(shape.begin(), shape.size()));
    }

    /// The declared tensors. After the first write their `offset` and `split` are final, as a reader sees them.
    [[nodiscard]] std::span<const tensor_info> tensors() const noexcept { return tensors_; }
    /// The tensor whose data comes next, or nullptr when all were written.
    [[nodiscard]] const tensor_info* next_tensor() const noexcept;

    /// Fixes the layout, creates the first file and writes its header. Called by the first write if needed.
    result<void> begin();
    /// Writes the whole data of the next tensor; `data.size()` must equal its byte size.
    result<void> write_tensor(std::span<const std::byte> data);
    /// Writes the next tensor's data in chunks of `chunk_bytes` produced by `fill`.
    result<void> write_tensor(const chunk_filler& fill, std::size_t chunk_bytes = std::size_t{1} << 20);
    /// Writes the next bytes of tensor data; may span tensor boundaries (padding is inserted between them).
    result<void> append(std::span<const std::byte> data);
    /// Checks every tensor was written, flushes and closes. Returns the paths written, in part order.
    result<std::vector<std::filesystem::path>> finish();

    /// The output paths, known after `begin`.
    [[nodiscard]] std::span<const std::filesystem::path> paths() const noexcept { return paths_; }

private:
    class sink;
    enum class state { declaring, writing, finished, failed };

    result<void> plan_parts();
    metadata part_metadata(std::uint32_t part) const;
    result<void> open_part(std::uint32_t part);
    result<void> finish_tensor();
    result<void> fail(error e);

    std::filesystem::path path_;
    writer_options options_;
    metadata kv_;
    std::vector<tensor_info> tensors_;
    std::vector<std::filesystem::path> paths_;
    std::vector<std::vector<std::byte>> headers_; ///< encoded header per part, released once written
    std::uint32_t n_parts_ = 1;
    std::unique_ptr<sink> sink_;
    std::size_t next_ = 0;         ///< index of the tensor being written
    std::uint64_t written_ = 0;    ///< bytes of tensors_[next_] written so far
    std::vector<std::byte> chunk_; ///< buffer for chunk_filler
    state state_ = state::declaring;
};

} // namespace sluice::gguf
