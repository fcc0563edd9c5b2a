// The weight formats Sluice knows: GGML type ids as stored in GGUF files, with block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::kernels {

/// GGML tensor type ids, numbered as in GGUF files: every id of GGUF's type table. Ids 4, 5, 31-33 and 36-38 were
/// removed from GGUF (removed_quant_type_name names them); others are unknown.
enum class quant_type : std::uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    iq2_xxs = 16,
    iq2_xs = 17,
    iq3_xxs = 18,
    iq1_s = 19,
    iq4_nl = 20,
    iq3_s = 21,
    iq2_s = 22,
    iq4_xs = 23,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    iq1_m = 29,
    bf16 = 30,
    tq1_0 = 34,
    tq2_0 = 35,
    mxfp4 = 39,
    nvfp4 = 40,
    q1_0 = 41,
    q2_0 = 42,
};

/// Block geometry of one type: `block_elems` values are stored in `block_bytes` bytes.
struct quant_traits {
    quant_type type;
    std::string_view name; ///< lower-case GGML name, e.g. "q4_K"
    std::uint32_t block_elems;
    std::uint32_t block_bytes;
};

/// Returns the traits of a raw GGUF type id, or nullopt when Sluice does not know the id.
std::optional<quant_traits> find_quant_traits(std::uint32_t raw_type) noexcept;

/// The GGML name of an id that GGUF files once used and llama.cpp removed ("q4_0_4_4" for 31, ...), or nullopt.
std::optional<std::string_view> removed_quant_type_name(std::uint32_t raw_type) noexcept;

/// Returns the traits of a known type. Thread-safe (reads a constant table).
const quant_traits& traits_of(quant_type type) noexcept;

/// Looks a type up by its GGML name ("q4_K", "f16", ...), case-insensitively.
std::optional<quant_type> parse_quant_type(std::string_view name) noexcept;

/// Bytes of one row of `elems` values, or nullopt when `elems` is not a multiple of the block size.
std::optional<std::uint64_t> row_bytes(quant_type type, std::uint64_t elems) noexcept;

} // namespace sluice::kernels
