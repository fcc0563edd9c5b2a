// Expert slab positions from the tensor table, and the slot size they imply.
#include "runtime/experts/expert_layout.hpp"

#include "runtime/models/tensor_names.hpp"

#include <algorithm>

namespace sluice::experts {

namespace {

constexpr std::uint64_t page = 4096;

using models::tensor_kind;
using models::tensor_suffix;

/// The tensor of each expert part, in expert_part order.
struct part_tensor {
    tensor_kind kind;
    tensor_suffix suffix;
};
constexpr std::array<part_tensor, max_expert_parts> part_tensors{{
    {tensor_kind::ffn_gate_exps, tensor_suffix::weight},
    {tensor_kind::ffn_up_exps, tensor_suffix::weight},
    {tensor_kind::ffn_down_exps, tensor_suffix::weight},
    {tensor_kind::ffn_gate_exps, tensor_suffix::bias},
    {tensor_kind::ffn_up_exps, tensor_suffix::bias},
    {tensor_kind::ffn_down_exps, tensor_suffix::bias},
}};

} // namespace

std::uint64_t expert_layout::aligned_extent(std::uint64_t offset, std::uint64_t bytes) noexcept {
    const std::uint64_t lo = offset & ~(page - 1);
    const std::uint64_t hi = (offset + bytes + page - 1) & ~(page - 1);
    return hi - lo;
}

std::uint64_t expert_layout::region_bytes(std::uint64_t slab_bytes) noexcept {
    return slab_bytes == 0 ? 0 : (slab_bytes + 2 * page - 1) & ~(page - 1);
}

std::uint64_t expert_layout::region_offset(std::uint32_t layer, std::size_t part) const noexcept {
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < part; ++i) {
        offset += region_bytes(layers[layer].slabs[i].bytes);
    }
    return offset;
}

result<expert_layout> make_expert_layout(const gguf::model_files& files, const models::model_hparams& hp) {
    expert_layout out;
    out.layers.resize(hp.n_layer);
    out.expert_used = hp.n_expert_used;
    if (!hp.is_moe()) {
        return out;
    }
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        auto& l = out.layers[il];
        std::uint64_t slot = 0, read = 0;
        for (std::size_t i = 0; i < max_expert_parts; ++i) {
            const bool matrix = i < 3;
            const auto name = models::tensor_name(part_tensors[i].kind, il, part_tensors[i].suffix);
            const auto* t = files.find_tensor(name);
            if (!t) {
                if (i == 0) {
                    break; // a dense layer of a MoE model
                }
                if (!matrix) {
                    continue; // no bias
                }
                return make_error(std::errc::invalid_argument, "tensor " + name + ": missing");
            }
            if (matrix && t->n_dims != 3) {
                return make_error(std::errc::invalid_argument, "tensor " + name + ": not a 3-D expert tensor");
            }
            const std::uint64_t n_expert = t->ne[t->n_dims - 1];
            if (i == 0) {
                l.n_expert = static_cast<std::uint32_t>(n_expert);
            }
            if (n_expert != l.n_expert || n_expert == 0 || t->bytes % n_expert != 0) {
                return make_error(std::errc::invalid_argument,
                                  "tensor " + name + ": " + std::to_string(n_expert) + " experts, expected " +
                                      std::to_string(l.n_expert) + " stacked in equal slabs");
            }
            const std::uint64_t stride = t->bytes / n_expert;
            l.slabs[i] = {t->split, t->offset, stride};
            slot += expert_layout::region_bytes(stride); // whatever the alignment of each expert
            read += expert_layout::aligned_extent(t->offset, stride);
            out.total_bytes += t->bytes;
        }
        out.total_count += l.n_expert;
        out.slot_bytes = std::max(out.slot_bytes, slot);
        out.read_bytes = std::max(out.read_bytes, read);
    }
    return out;
}

} // namespace sluice::experts
