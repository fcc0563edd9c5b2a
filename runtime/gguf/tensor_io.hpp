// Reading tensor data of a GGUF model through io::reader (io_uring or pread), never through mmap.
#pragma once

#include "io/reader.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/tensor_info.hpp"
#include "sluice/error.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::gguf {

/// Reads the whole data of `tensor` (which must belong to `model`) into `dest`; `dest.size()` must equal
/// `tensor.bytes`. Runs on the reader's executor. Errors name the tensor ("tensor blk.0.attn_q.weight: ...").
boost::asio::awaitable<result<void>> read_tensor(io::reader& reader, const model_files& model,
                                                 const tensor_info& tensor, std::span<std::byte> dest);

/// Reads `dest.size()` bytes of `tensor` starting `offset` bytes into its data (an expert slab, a row
/// range); the range must lie inside the tensor.
boost::asio::awaitable<result<void>> read_tensor_range(io::reader& reader, const model_files& model,
                                                       const tensor_info& tensor, std::uint64_t offset,
                                                       std::span<std::byte> dest);

/// Reads expert `expert` of a 3-D expert tensor (`tensor.expert_stride()` bytes) into `dest`.
boost::asio::awaitable<result<void>> read_expert(io::reader& reader, const model_files& model,
                                                 const tensor_info& tensor, std::uint64_t expert,
                                                 std::span<std::byte> dest);

/// The io request for a byte range of `tensor`, for callers batching many reads with `reader.read_batch`.
/// Errors when the range is outside the tensor or the tensor's part has no open file.
result<io::read_request> tensor_read_request(const model_files& model, const tensor_info& tensor, std::uint64_t offset,
                                             std::span<std::byte> dest);

} // namespace sluice::gguf
