// Building quantized random pools and copying them out as tensor data.
#include "runtime/mkmodel/block_pool.hpp"

#include "kernels/quant.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace sluice::mkmodel {

block_pool::block_pool(kernels::quant_type type, float stddev, std::uint64_t bytes, std::uint64_t seed)
    : type_(type), stddev_(stddev), block_bytes_(kernels::traits_of(type).block_bytes) {
    assert(kernels::can_quantize(type) || kernels::can_scale_random_blocks(type));
    const std::size_t block_elems = kernels::traits_of(type).block_elems;
    const std::uint64_t want = std::clamp<std::uint64_t>(bytes, block_bytes_, max_pool_bytes);
    const std::size_t blocks = static_cast<std::size_t>(want / block_bytes_);
    data_.resize(blocks * block_bytes_);

    random_stream rng(seed);
    if (!kernels::can_quantize(type)) {
        // Formats without a quantizer (the IQ types need an importance matrix): random grid indices, signs and
        // sub-scales, with each block's super-scale set so its values have the wanted spread.
        for (auto& byte : data_) {
            byte = static_cast<std::byte>(rng.below(256));
        }
        kernels::scale_random_blocks(type, data_.data(), blocks, stddev);
        return;
    }
    // Quantize in pieces so the float buffer stays small whatever the block size.
    const std::size_t piece_blocks = std::max<std::size_t>(1, 65536 / block_elems);
    std::vector<float> values(piece_blocks * block_elems);
    for (std::size_t b = 0; b < blocks; b += piece_blocks) {
        const std::size_t n_blocks = std::min(piece_blocks, blocks - b);
        const std::size_t n = n_blocks * block_elems;
        for (std::size_t i = 0; i < n; ++i) {
            values[i] = stddev * rng.normal();
        }
        kernels::quantize_row(type, values.data(), data_.data() + b * block_bytes_, n);
    }
}

block_stream::block_stream(const block_pool& pool, std::uint64_t seed) noexcept
    : pool_(&pool), rng_(seed), run_blocks_(std::clamp<std::size_t>(4096 / pool.block_bytes(), 1, pool.block_count())) {
}

void block_stream::fill(std::span<std::byte> out) noexcept {
    const std::byte* pool = pool_->data().data();
    while (!out.empty()) {
        if (run_left_ == 0) {
            const std::size_t start = rng_.below(pool_->block_count() - run_blocks_ + 1);
            run_pos_ = start * pool_->block_bytes();
            run_left_ = run_blocks_ * pool_->block_bytes();
        }
        const std::size_t n = std::min(run_left_, out.size());
        std::memcpy(out.data(), pool + run_pos_, n);
        run_pos_ += n;
        run_left_ -= n;
        out = out.subspan(n);
    }
}

} // namespace sluice::mkmodel
