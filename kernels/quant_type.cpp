// Table of GGML type ids with their block geometry (block layouts as GGUF defines them).
#include "kernels/quant_type.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>

namespace sluice::kernels {
namespace {

constexpr std::array<quant_traits, 35> table{{
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
    {quant_type::iq2_xxs, "iq2_xxs", 256, 66},
    {quant_type::iq2_xs, "iq2_xs", 256, 74},
    {quant_type::iq3_xxs, "iq3_xxs", 256, 98},
    {quant_type::iq1_s, "iq1_s", 256, 50},
    {quant_type::iq4_nl, "iq4_nl", 32, 18},
    {quant_type::iq3_s, "iq3_s", 256, 110},
    {quant_type::iq2_s, "iq2_s", 256, 82},
    {quant_type::iq4_xs, "iq4_xs", 256, 136},
    {quant_type::i8, "i8", 1, 1},
    {quant_type::i16, "i16", 1, 2},
    {quant_type::i32, "i32", 1, 4},
    {quant_type::i64, "i64", 1, 8},
    {quant_type::f64, "f64", 1, 8},
    {quant_type::iq1_m, "iq1_m", 256, 56},
    {quant_type::bf16, "bf16", 1, 2},
    {quant_type::tq1_0, "tq1_0", 256, 54},
    {quant_type::tq2_0, "tq2_0", 256, 66},
    {quant_type::mxfp4, "mxfp4", 32, 17},
    {quant_type::nvfp4, "nvfp4", 64, 36},
    {quant_type::q1_0, "q1_0", 128, 18},
    {quant_type::q2_0, "q2_0", 64, 18},
}};

struct removed_type {
    std::uint32_t id;
    std::string_view name;
};
constexpr removed_type removed[] = {{4, "q4_2"},      {5, "q4_3"},        {31, "q4_0_4_4"},   {32, "q4_0_4_8"},
                                    {33, "q4_0_8_8"}, {36, "iq4_nl_4_4"}, {37, "iq4_nl_4_8"}, {38, "iq4_nl_8_8"}};

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

std::optional<std::string_view> removed_quant_type_name(std::uint32_t raw_type) noexcept {
    for (const auto& r : removed) {
        if (r.id == raw_type) {
            return r.name;
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
