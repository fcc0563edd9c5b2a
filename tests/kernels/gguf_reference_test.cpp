// Dequantisation against llama.cpp's gguf-py, bit for bit, at every ISA level: the vectors in
// fixtures/gguf_reference (made by tools/gguf_reference/make_vectors.py) hold random blocks and edge cases (NaN, Inf,
// zero and subnormal scales, the largest and smallest grid indices, fully random bytes) with gguf-py's values. The
// same blocks go through every dot kernel too, which under ASan proves that no scale or index reads out of bounds.
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace sluice::kernels {
namespace {

struct reference_file {
    std::string name;
    quant_type type{};
    std::size_t blocks = 0, block_bytes = 0, block_elems = 0;
    std::vector<std::uint8_t> data;
    std::vector<float> values;
};

std::filesystem::path reference_dir() {
    return std::filesystem::path(SLUICE_SOURCE_DIR) / "tests/kernels/fixtures/gguf_reference";
}

reference_file read_reference(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    reference_file f;
    f.name = path.stem().string();
    if (bytes.size() < 20 || std::memcmp(bytes.data(), "SLQR", 4) != 0) {
        ADD_FAILURE() << path << ": not a reference file";
        return f;
    }
    std::uint32_t head[4];
    std::memcpy(head, bytes.data() + 4, sizeof head);
    f.type = static_cast<quant_type>(head[0]);
    f.blocks = head[1];
    f.block_bytes = head[2];
    f.block_elems = head[3];
    const std::size_t data_bytes = f.blocks * f.block_bytes, n = f.blocks * f.block_elems;
    if (bytes.size() != 20 + data_bytes + n * sizeof(float)) {
        ADD_FAILURE() << path << ": size does not match its header";
        return f;
    }
    f.data.assign(bytes.begin() + 20, bytes.begin() + 20 + static_cast<std::ptrdiff_t>(data_bytes));
    f.values.resize(n);
    std::memcpy(f.values.data(), bytes.data() + 20 + data_bytes, n * sizeof(float));
    return f;
}

std::vector<reference_file> all_references() {
    std::vector<reference_file> files;
    for (const auto& entry : std::filesystem::directory_iterator(reference_dir())) {
        files.push_back(read_reference(entry.path()));
    }
    return files;
}

TEST(gguf_reference, every_weight_type_with_kernels_has_reference_vectors) {
    std::vector<std::string> names;
    for (const auto& f : all_references()) {
        names.push_back(f.name);
    }
    for (std::uint32_t id = 0; id < 64; ++id) {
        const auto t = find_quant_traits(id);
        if (!t || !has_kernels(t->type) || t->type == quant_type::f32) {
            continue;
        }
        std::string lower(t->name);
        for (auto& c : lower) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        EXPECT_NE(std::find(names.begin(), names.end(), lower), names.end()) << "no vectors for " << t->name;
    }
}

TEST(gguf_reference, dequantization_equals_gguf_py_bit_for_bit_at_every_level) {
    const auto files = all_references();
    ASSERT_GE(files.size(), 20u);
    for (const auto& f : files) {
        ASSERT_TRUE(has_kernels(f.type)) << f.name;
        ASSERT_EQ(traits_of(f.type).block_bytes, f.block_bytes) << f.name;
        ASSERT_EQ(traits_of(f.type).block_elems, f.block_elems) << f.name;
        for (isa_level isa : supported_isas()) {
            std::vector<float> got(f.values.size());
            // Block by block, so a block's neighbours cannot hide an error in how one block is read.
            for (std::size_t b = 0; b < f.blocks; ++b) {
                dequantize_row(f.type, f.data.data() + b * f.block_bytes, got.data() + b * f.block_elems, f.block_elems,
                               isa);
            }
            for (std::size_t i = 0; i < got.size(); ++i) {
                const float want = f.values[i];
                const bool same = std::isnan(want)
                                      ? std::isnan(got[i])
                                      : std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want);
                EXPECT_TRUE(same) << f.name << " " << isa_name(isa) << " block " << i / f.block_elems << " value "
                                  << i % f.block_elems << ": got " << got[i] << ", gguf-py " << want;
            }
        }
    }
}

TEST(gguf_reference, dot_kernels_take_edge_blocks_without_faults) {
    // NaN/Inf scales give NaN/Inf sums, not crashes; under ASan any out-of-range table or block read fails here.
    for (const auto& f : all_references()) {
        const std::size_t act_elems = std::max<std::size_t>(f.block_elems, 256);
        if (act_elems % f.block_elems != 0 || f.blocks * f.block_elems < act_elems) {
            continue;
        }
        const std::size_t per_row = act_elems / f.block_elems;
        const std::size_t rows = f.blocks / per_row;
        std::vector<float> x(act_elems * 5);
        for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] = std::sin(0.37f * static_cast<float>(i));
        }
        for (isa_level isa : supported_isas()) {
            std::vector<float> y(rows * 5);
            matmul(f.type, f.data.data(), rows, act_elems, x.data(), 5, y.data(), isa);
            std::size_t finite = 0;
            for (float v : y) {
                finite += std::isfinite(v) ? 1 : 0;
            }
            // The first rows hold ordinary blocks (one row of 256 for the float formats, which holds the specials).
            EXPECT_TRUE(rows == 1 || finite > 0) << f.name << " " << isa_name(isa);
        }
    }
}

} // namespace
} // namespace sluice::kernels
