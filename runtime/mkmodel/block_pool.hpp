// Fast random tensor data: a pool of random weights quantized once per (type, standard deviation), and a
// stream that fills a tensor of any size by copying runs of whole pool blocks from random block-aligned
// offsets, so writing tens of gigabytes is bound by the disk, not by quantization.
#pragma once

#include "kernels/quant_type.hpp"
#include "runtime/mkmodel/random.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::mkmodel {

/// Most bytes one pool holds (enough variety: ~29k Q4_K blocks, 1M F32 values).
inline constexpr std::uint64_t max_pool_bytes = std::uint64_t{4} << 20;

/// Blocks of N(0, stddev) values in one weight type. Immutable after construction; share freely.
class block_pool {
public:
    /// Quantizes about `bytes` bytes (at least one block, at most max_pool_bytes) of N(0, stddev) values,
    /// drawn from `seed`. `kernels::can_quantize(type)` must hold, or `kernels::can_scale_random_blocks(type)`: then
    /// the blocks are random bytes made valid weights of about that spread (the IQ formats, which need an
    /// importance matrix to quantize).
    block_pool(kernels::quant_type type, float stddev, std::uint64_t bytes, std::uint64_t seed);

    [[nodiscard]] kernels::quant_type type() const noexcept { return type_; }
    [[nodiscard]] float stddev() const noexcept { return stddev_; }
    [[nodiscard]] std::size_t block_bytes() const noexcept { return block_bytes_; }
    [[nodiscard]] std::size_t block_count() const noexcept { return data_.size() / block_bytes_; }
    [[nodiscard]] std::span<const std::byte> data() const noexcept { return data_; }

private:
    kernels::quant_type type_;
    float stddev_;
    std::size_t block_bytes_;
    std::vector<std::byte> data_;
};

/// Produces a tensor's bytes from a pool: consecutive runs of about 4 KiB of whole blocks, each starting at a
/// block picked by a seeded stream. The output depends only on the pool and the seed, not on how the bytes
/// are split into `fill` calls. The pool must outlive the stream. Not thread-safe.
class block_stream {
public:
    block_stream(const block_pool& pool, std::uint64_t seed) noexcept;

    /// Writes the next `out.size()` bytes.
    void fill(std::span<std::byte> out) noexcept;

private:
    const block_pool* pool_;
    random_stream rng_;
    std::size_t run_blocks_;   ///< blocks per run
    std::size_t run_pos_ = 0;  ///< pool byte offset of the rest of the current run
    std::size_t run_left_ = 0; ///< bytes left in the current run
};

} // namespace sluice::mkmodel
