// One tensor as a GGUF file describes it: name, type, shape, size and where its bytes are.
#pragma once

#include "kernels/quant_type.hpp"
#include "sluice/error.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sluice::gguf {

/// Most dimensions a GGUF tensor may have.
inline constexpr std::uint32_t max_dims = 4;

/// A contiguous range of bytes in one file.
struct byte_range {
    std::uint64_t offset = 0; ///< absolute file offset
    std::uint64_t size = 0;
};

/// A validated tensor description. Shape is `ne` as GGUF stores it: fastest-varying dimension first,
/// so ne[0] is the row length and a matrix of `ne[1]` rows of `ne[0]` values has shape {ne0, ne1}.
struct tensor_info {
    std::string name;
    kernels::quant_type type = kernels::quant_type::f32;
    std::uint32_t n_dims = 0;
    std::array<std::uint64_t, max_dims> ne{1, 1, 1, 1}; ///< unused trailing dims are 1
    std::uint64_t n_elements = 0;
    std::uint64_t bytes = 0;  ///< size of the data in the file
    std::uint64_t offset = 0; ///< absolute offset of the data in its part file
    std::uint32_t split = 0;  ///< index of the part file holding the data (0 when not split)

    /// The shape, `n_dims` entries, fastest-varying first.
    [[nodiscard]] std::span<const std::uint64_t> shape() const noexcept { return {ne.data(), n_dims}; }
    /// Bytes of one row of ne[0] values (the shape was validated, so this is exact).
    [[nodiscard]] std::uint64_t row_bytes() const noexcept;
    /// The data as a byte range of its part file.
    [[nodiscard]] byte_range data() const noexcept { return {offset, bytes}; }
    /// True when the name marks a routed-expert tensor (`*_exps` or `*_exps.<suffix>`).
    [[nodiscard]] bool is_expert() const noexcept;
    /// Number of experts of a 3-D expert tensor (ne[2]), else 0.
    [[nodiscard]] std::uint64_t expert_count() const noexcept { return n_dims == 3 ? ne[2] : 0; }
    /// Distance between consecutive experts of a 3-D tensor: nb[2] = ne[1] * row_bytes(ne[0]).
    [[nodiscard]] std::uint64_t expert_stride() const noexcept { return ne[1] * row_bytes(); }
    /// Bytes of expert `e` of a 3-D tensor: offset + e * stride, size stride. Error when the tensor is
    /// not 3-D or `e` >= ne[2].
    [[nodiscard]] result<byte_range> expert_slab(std::uint64_t e) const;
};

/// True when a tensor name denotes routed experts: it contains "_exps" followed by '.' or the end
/// ("blk.0.ffn_up_exps.weight"); shared experts ("_shexp") do not match.
bool is_expert_tensor_name(std::string_view name) noexcept;

/// Shape as text, "[2048, 768, 128]".
std::string shape_string(const tensor_info& t);

/// The block index of "blk.N.*" names, or -1 for tensors outside the repeated blocks.
int block_index(std::string_view tensor_name) noexcept;

} // namespace sluice::gguf
