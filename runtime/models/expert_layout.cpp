// Expert slab positions from the tensor table, and the slot size they imply.
#include "runtime/models/expert_layout.hpp"

#include "runtime/models/tensor_plan.hpp"

#include <algorithm>

namespace sluice::models {

namespace {
constexpr std::uint64_t page = 4096;
} // namespace

std::uint64_t expert_layout::aligned_extent(std::uint64_t offset, std::uint64_t bytes) noexcept {
    const std::uint64_t lo = offset & ~(page - 1);
    const std::uint64_t hi = (offset + bytes + page - 1) & ~(page - 1);
    return hi - lo;
}

std::uint64_t expert_layout::region_bytes(std::uint64_t slab_bytes) noexcept {
    return (slab_bytes + 2 * page - 1) & ~(page - 1);
}

std::uint64_t expert_layout::region_offset(std::uint32_t layer, std::uint32_t part) const noexcept {
    std::uint64_t offset = 0;
    for (std::uint32_t i = 0; i < part; ++i) {
        offset += region_bytes(layers[layer].slabs[i].bytes);
    }
    return offset;
}

result<expert_layout> make_expert_layout(const gguf::model_files& files, const model_hparams& hp) {
    expert_layout out;
    out.layers.resize(hp.n_layer);
    out.expert_used = hp.n_expert_used;
    if (!hp.is_moe()) {
        return out;
    }
    static constexpr std::array<std::string_view, 3> names{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        auto& l = out.layers[il];
        std::uint64_t slot = 0, read = 0;
        for (std::size_t i = 0; i < names.size(); ++i) {
            const auto name = layer_tensor_name(il, names[i], "weight");
            const auto* t = files.find_tensor(name);
            if (!t) {
                if (i == 0) {
                    break; // a dense layer of a MoE model
                }
                return make_error(std::errc::invalid_argument, "tensor " + name + ": missing");
            }
            if (t->n_dims != 3) {
                return make_error(std::errc::invalid_argument, "tensor " + name + ": not a 3-D expert tensor");
            }
            l.slabs[i] = {t->split, t->offset, t->expert_stride()};
            l.n_expert = static_cast<std::uint32_t>(t->expert_count());
            slot += expert_layout::region_bytes(t->expert_stride()); // whatever the alignment of each expert
            read += expert_layout::aligned_extent(t->offset, t->expert_stride());
            out.total_bytes += t->expert_stride() * t->expert_count();
        }
        out.total_count += l.n_expert;
        out.slot_bytes = std::max(out.slot_bytes, slot);
        out.read_bytes = std::max(out.read_bytes, read);
    }
    return out;
}

} // namespace sluice::models
