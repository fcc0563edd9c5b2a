// Converting a Hugging Face safetensors checkpoint folder into one GGUF file, tensor by tensor.
#pragma once

#include "kernels/quant_type.hpp"
#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::convert {

/// Output weight formats `--type` accepts.
enum class output_type { f32, f16, bf16, q8_0, q4_k, q6_k, q2_k, q3_k, q5_k };

/// Parses "f32", "f16", "bf16", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k" (case-insensitive).
std::optional<output_type> parse_output_type(std::string_view name);

/// llama.cpp's llama_ftype number for general.file_type (q4_k is recorded as MOSTLY_Q4_K_M, 15; q3_k as
/// MOSTLY_Q3_K_S, 11; q5_k as MOSTLY_Q5_K_S, 16).
std::uint32_t file_type_of(output_type type) noexcept;

/// The GGUF type a tensor gets: F32 for vectors and routers; otherwise `type`, falling back to Q8_0 and then
/// F16 when a row of `row_elems` values is not a multiple of the block size (K-quants need 256, Q8_0 32).
kernels::quant_type tensor_type(output_type type, bool weight, std::uint64_t row_elems) noexcept;

/// One tensor done (or about to be written): for progress display.
struct convert_progress {
    std::size_t index = 0; ///< 0-based
    std::size_t count = 0;
    std::string_view name;
    kernels::quant_type type = kernels::quant_type::f32;
    std::uint64_t bytes = 0;
};

struct convert_options {
    output_type type = output_type::f16;
    std::string name; ///< general.name; empty: the checkpoint folder's name
    /// Called after each tensor is written; may be empty.
    std::function<void(const convert_progress&)> on_tensor;
};

struct convert_summary {
    std::string arch;
    std::size_t tensors = 0;
    std::uint64_t bytes = 0;   ///< tensor data bytes written
    std::size_t fallbacks = 0; ///< tensors written in a wider type than asked because their rows did not fit
};

/// Converts `hf_dir` (config.json, tokenizer.json, tokenizer_config.json, safetensors) to `out`. Writes
/// "<out>.tmp" and renames it to `out` at the end; on failure the temporary file is removed and `out` is left
/// untouched. Holds one batch of rows in memory at a time. Errors name the file, field or tensor.
result<convert_summary> convert_checkpoint(const std::filesystem::path& hf_dir, const std::filesystem::path& out,
                                           const convert_options& options);

} // namespace sluice::convert
