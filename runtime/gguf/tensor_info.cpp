// Tensor descriptions: derived sizes, expert slabs and name helpers.
#include "runtime/gguf/tensor_info.hpp"

#include <charconv>

namespace sluice::gguf {

std::uint64_t tensor_info::row_bytes() const noexcept {
    const auto& t = kernels::traits_of(type);
    return ne[0] / t.block_elems * t.block_bytes;
}

bool tensor_info::is_expert() const noexcept {
    return is_expert_tensor_name(name);
}

result<byte_range> tensor_info::expert_slab(std::uint64_t e) const {
    if (n_dims != 3) {
        return make_error(std::errc::invalid_argument,
                          "tensor " + name + ": expected a 3-D expert tensor, has " + std::to_string(n_dims) + " dims");
    }
    if (e >= ne[2]) {
        return make_error(std::errc::invalid_argument, "tensor " + name + ": expert " + std::to_string(e) +
                                                           " out of range (" + std::to_string(ne[2]) + " experts)");
    }
    const std::uint64_t stride = expert_stride();
    return byte_range{offset + e * stride, stride};
}

bool is_expert_tensor_name(std::string_view name) noexcept {
    constexpr std::string_view tag = "_exps";
    for (std::size_t pos = name.find(tag); pos != std::string_view::npos; pos = name.find(tag, pos + 1)) {
        const std::size_t end = pos + tag.size();
        if (end == name.size() || name[end] == '.') {
            return true;
        }
    }
    return false;
}

std::string shape_string(const tensor_info& t) {
    std::string s = "[";
    for (std::uint32_t i = 0; i < t.n_dims; ++i) {
        if (i != 0) {
            s += ", ";
        }
        s += std::to_string(t.ne[i]);
    }
    return s + "]";
}

int block_index(std::string_view tensor_name) noexcept {
    constexpr std::string_view prefix = "blk.";
    if (!tensor_name.starts_with(prefix)) {
        return -1;
    }
    int n = -1;
    const char* first = tensor_name.data() + prefix.size();
    const char* last = tensor_name.data() + tensor_name.size();
    const auto [ptr, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || ptr == first || ptr == last || *ptr != '.' || n < 0) {
        return -1;
    }
    return n;
}

} // namespace sluice::gguf
