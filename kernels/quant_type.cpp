// Table of GGML type ids with their block geometry (block layouts as GGUF defines them).
#include "kernels/quant_type.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>

namespace sluice::kernels {
namespace {

constexpr std::array<quant_traits, 23> table{{
    {quant_type::f32, "f32", 1, 4},
    {quant_type::f16, "f16", 1, 2},
    {quant_type::q4_0, "q4_0", 32, 18},
    {quant_type::q4_1, "q4_1", 32, 20},
    {quant_type::q5_0, "q5_0", 32, 22},
    {quant_type::q5_1, "q5_1", 32, 24},
    {quant_type::q8_0, "q8_0", 32, 34},
    {quant_type::q8_1, "q8_1", 32, 36},
    {quant_type::q2_k, "q2_K", 256, 84},
    {quant_type::q3_k, "q3_K", 256, 110},
    {quant_type::q4_k, "q4_K", 256, 144},
    {quant_type::q5_k, "q5_K", 256, 176},
    {quant_type::q6_k, "q6_K", 256, 210},
    {quant_type::q8_k, "q8_K", 256, 292},
    {quant_type::iq4_nl, "iq4_nl", 32, 18},
    {quant_type::iq4_xs, "iq4_xs", 256, 136},
    {quant_type::i8, "i8", 1, 1},
    {quant_type::i16, "i16", 1, 2},
    {quant_type::i32, "i32", 1, 4},
    {quant_type::i64, "i64", 1, 8},
    {quant_type::f64, "f64", 1, 8},
    {quant_type::bf16, "bf16", 1, 2},
    {quant_type::mxfp4, "mxfp4", 32, 17},
}};

bool iequal(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

} // namespace

std::optional<quant_traits> find_quant_traits(std::uint32_t raw_type) noexcept {
    for (const auto& t : table) {
        if (static_cast<std::uint32_t>(t.type) == raw_type) {
            return t;
        }
    }
    return std::nullopt;
}

const quant_traits& traits_of(quant_type type) noexcept {
    for (const auto& t : table) {
        if (t.type == type) {
            return t;
        }
    }
    assert(false && "quant_type missing from the table");
    return table[0];
}

std::optional<quant_type> parse_quant_type(std::string_view name) noexcept {
    for (const auto& t : table) {
        if (iequal(t.name, name)) {
            return t.type;
        }
    }
    return std::nullopt;
}

std::optional<std::uint64_t> row_bytes(quant_type type, std::uint64_t elems) noexcept {
    const auto& t = traits_of(type);
    if (elems % t.block_elems != 0) {
        return std::nullopt;
    }
    return elems / t.block_elems * t.block_bytes;
}

} // namespace sluice::kernels
