// Random test data for kernel tests (see test_data.hpp).
#include "tests/kernels/test_data.hpp"

#include "kernels/cpu/fp16.hpp"
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"

#include <algorithm>
#include <cstring>

namespace sluice::kernels::test {
namespace {

// Byte offsets of the f16 scale fields inside one block.
std::vector<std::size_t> f16_field_offsets(quant_type type) {
    switch (type) {
    case quant_type::q4_0:
    case quant_type::q5_0:
    case quant_type::q8_0:
    case quant_type::iq4_nl:
    case quant_type::iq4_xs:
    case quant_type::iq2_xxs:
    case quant_type::iq2_xs:
    case quant_type::iq2_s:
    case quant_type::iq3_xxs:
    case quant_type::iq3_s:
    case quant_type::iq1_s:
        return {0};
    case quant_type::q4_1:
    case quant_type::q5_1:
    case quant_type::q4_k:
    case quant_type::q5_k:
        return {0, 2};
    case quant_type::q6_k:
        return {208};
    case quant_type::q2_k:
        return {80, 82};
    case quant_type::q3_k:
        return {108};
    case quant_type::tq1_0:
        return {52};
    case quant_type::tq2_0:
        return {64};
    default:
        return {};
    }
}

} // namespace

const std::vector<quant_type>& all_formats() {
    static const std::vector<quant_type> formats{
        quant_type::f32,   quant_type::f16,     quant_type::bf16,   quant_type::q8_0,   quant_type::q4_0,
        quant_type::q4_1,  quant_type::q5_0,    quant_type::q5_1,   quant_type::iq4_nl, quant_type::q4_k,
        quant_type::q5_k,  quant_type::q6_k,    quant_type::iq4_xs, quant_type::mxfp4,  quant_type::q2_k,
        quant_type::q3_k,  quant_type::iq2_xxs, quant_type::iq2_xs, quant_type::iq2_s,  quant_type::iq3_xxs,
        quant_type::iq3_s, quant_type::iq1_s,   quant_type::iq1_m,  quant_type::tq1_0,  quant_type::tq2_0};
    return formats;
}

std::vector<float> random_floats(std::mt19937& rng, std::size_t n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> pick(0, 99);
    std::vector<float> v(n);
    for (auto& x : v) {
        x = normal(rng) * (pick(rng) == 0 ? 8.0f : 1.0f);
    }
    return v;
}

std::vector<std::uint8_t> random_weights(std::mt19937& rng, quant_type type, std::size_t rows, std::size_t cols) {
    const auto& t = traits_of(type);
    const std::size_t rb = *row_bytes(type, cols);
    std::vector<std::uint8_t> w(rows * rb);
    if (type == quant_type::f32 || type == quant_type::f16 || type == quant_type::bf16) {
        for (std::size_t r = 0; r < rows; ++r) {
            quantize_row(type, random_floats(rng, cols).data(), w.data() + r * rb, cols);
        }
        return w;
    }
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.001f, 0.1f);
    for (auto& b : w) {
        b = static_cast<std::uint8_t>(byte(rng));
    }
    const std::size_t n_blocks = w.size() / t.block_bytes;
    for (std::size_t b = 0; b < n_blocks; ++b) {
        std::uint8_t* block = w.data() + b * t.block_bytes;
        for (std::size_t off : f16_field_offsets(type)) {
            const std::uint16_t h = f32_to_fp16(scale(rng));
            std::memcpy(block + off, &h, 2);
        }
        if (type == quant_type::iq1_m) {
            // The f16 super-scale lives in the top nibbles of the four scale words (bytes 48..55).
            const std::uint16_t h = f32_to_fp16(scale(rng));
            for (int i = 0; i < 4; ++i) {
                std::uint16_t word;
                std::memcpy(&word, block + 48 + 2 * i, 2);
                word = static_cast<std::uint16_t>((word & 0x0fff) | (((h >> (4 * i)) & 0xf) << 12));
                std::memcpy(block + 48 + 2 * i, &word, 2);
            }
        }
        if (type == quant_type::mxfp4) {
            // E8M0 scales from 2^-12 to 2^-4 (values up to 12 times that), like a trained model's.
            block[0] = static_cast<std::uint8_t>(116 + byte(rng) % 9);
        }
        if (type == quant_type::q8_0) {
            // Q8_0 values lie in [-127, 127] (the quantizer never yields -128; the SIMD sign trick relies on it).
            for (std::size_t i = 2; i < t.block_bytes; ++i) {
                block[i] = block[i] == 0x80 ? 0x81 : block[i];
            }
        }
    }
    return w;
}

std::vector<float> reference_dequantize(quant_type type, const std::uint8_t* w, std::size_t rows, std::size_t cols) {
    std::vector<float> out(rows * cols);
    const std::size_t rb = *row_bytes(type, cols);
    for (std::size_t r = 0; r < rows; ++r) {
        dequantize_row(type, w + r * rb, out.data() + r * cols, cols, isa_level::scalar);
    }
    return out;
}

std::size_t act_block(quant_type type) {
    const std::size_t bytes = prepared_row_bytes(type, 256);
    return bytes == 256 * sizeof(float) ? 1 : bytes == 8 * 34 ? 32 : 256;
}

std::size_t cols_for(quant_type type, std::size_t blocks) {
    return blocks * std::max<std::size_t>(traits_of(type).block_elems, act_block(type));
}

} // namespace sluice::kernels::test
