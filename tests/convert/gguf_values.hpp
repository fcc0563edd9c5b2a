// Test helpers: converting a synthetic checkpoint and reading a GGUF tensor back as floats.
#pragma once

#include "kernels/quant.hpp"
#include "runtime/gguf/model_files.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace sluice::test {

/// The values of `t` (a tensor of the single-file GGUF `path`), dequantized row by row.
inline std::vector<float> read_values(const std::filesystem::path& path, const gguf::tensor_info& t) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(t.offset));
    std::vector<char> raw(t.bytes);
    in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
    if (!in) {
        throw std::runtime_error("cannot read tensor " + t.name);
    }
    const std::uint64_t row = t.ne[0];
    const std::uint64_t rows = t.n_elements / row;
    const std::uint64_t row_bytes = t.bytes / rows;
    std::vector<float> out(t.n_elements);
    for (std::uint64_t r = 0; r < rows; ++r) {
        kernels::dequantize_row(t.type, raw.data() + r * row_bytes, out.data() + r * row, row);
    }
    return out;
}

} // namespace sluice::test
