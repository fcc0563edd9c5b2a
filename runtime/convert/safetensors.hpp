// Reading Hugging Face safetensors checkpoints: one file or shards listed by model.safetensors.index.json,
// headers checked against the file sizes, tensor rows read through io::reader and widened to float.
#pragma once

#include "io/file.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::convert {

/// Element types the converter reads; everything else is `other` (kept so errors can name it).
/// f8_e4m3 reads need block scales (attach_block_scales); int_packed is a weight assembled by attach_packed_int.
enum class st_dtype { f32, f16, bf16, f8_e4m3, int_packed, other };

/// One tensor of a safetensors file. `shape` is in PyTorch order (slowest first).
struct st_tensor {
    std::string name;
    std::string dtype_name; ///< as written in the file: "BF16", "I64", ...
    st_dtype dtype = st_dtype::other;
    std::vector<std::uint64_t> shape;
    std::uint32_t file = 0;   ///< index into the checkpoint's files
    std::uint64_t offset = 0; ///< absolute byte offset in its file
    std::uint64_t bytes = 0;
    /// F8 weights: the index of their block-scale tensor among the checkpoint's `block_scales()`, or -1, and the
    /// block size (see checkpoint::attach_block_scales).
    std::int32_t block_scale = -1;
    std::uint32_t block_rows = 0, block_cols = 0;
    std::uint32_t packed_bits = 0; ///< int_packed: bits per value (values packed low bits first in 32-bit words)

    /// Values per row: the last dimension (1 for a scalar).
    [[nodiscard]] std::uint64_t row_elems() const noexcept { return shape.empty() ? 1 : shape.back(); }
    /// Number of rows: the product of all but the last dimension.
    [[nodiscard]] std::uint64_t rows() const noexcept;
};

/// "[2, 3, 4]".
std::string shape_string(std::span<const std::uint64_t> shape);

/// Parses the JSON header of a safetensors file whose data section starts at `data_start` in a file of
/// `file_size` bytes. Checks every entry: dtype string, shape, data_offsets in order, inside the data section,
/// and (for known dtypes) equal to the shape's byte size; all arithmetic is overflow-checked.
/// Errors name the tensor and the problem.
result<std::vector<st_tensor>> parse_safetensors_header(std::string_view header_json, std::uint64_t data_start,
                                                        std::uint64_t file_size, std::uint32_t file_index = 0);

/// A checkpoint folder opened for reading: model.safetensors, or the shards model.safetensors.index.json
/// names. Reads are synchronous for the caller; underneath they go through an io::reader on a private
/// io_context. Not thread-safe. Move-only.
class checkpoint {
public:
    /// Opens `dir`: the index json when present (every shard it names is opened and every tensor it lists must
    /// be in its shard), else model.safetensors. Errors name the file and the problem.
    static result<checkpoint> open(const std::filesystem::path& dir);
    /// Opens the given safetensors files as one checkpoint (tensor names must be unique across them).
    static result<checkpoint> open_files(std::span<const std::filesystem::path> files);

    checkpoint(checkpoint&&) noexcept;
    checkpoint& operator=(checkpoint&&) noexcept;
    ~checkpoint();

    /// Every tensor, in file order (shard by shard).
    [[nodiscard]] std::span<const st_tensor> tensors() const noexcept { return tensors_; }
    /// The tensor called `name`, or nullptr.
    [[nodiscard]] const st_tensor* find(std::string_view name) const;

    /// Pairs every `X.weight_scale_inv` tensor with its F8_E4M3 weight `X.weight` (DeepSeek-V3's FP8 format,
    /// quantization_config.weight_block_size = [block_rows, block_cols]) and takes the scale tensors out of
    /// `tensors()`: reads of the weight then return dequantised values. Errors name the tensor: a scale without
    /// its weight, a weight that is not a 2-D F8_E4M3 matrix, a scale that is not F32 of shape
    /// [ceil(rows / block_rows), ceil(cols / block_cols)], an F8_E4M3 tensor left without a scale.
    result<void> attach_block_scales(std::uint32_t block_rows, std::uint32_t block_cols);
    /// Assembles every compressed-tensors "pack-quantized" weight (Kimi-K2-Thinking and K2.5's experts):
    /// `X.weight_packed` (I32 [rows, ceil(cols * bits / 32)], values low bits first, offset by 2^(bits-1)),
    /// `X.weight_scale` (F32/F16/BF16 [rows, ceil(cols / group_size)]) and `X.weight_shape` (I64 [rows, cols])
    /// become one tensor `X.weight` [rows, cols] whose reads are dequantised: (q - 2^(bits-1)) * scale. Errors
    /// name the tensor: a missing or misshapen part, an asymmetric weight (a zero point), bits other than 4 or 8.
    result<void> attach_packed_int(std::uint32_t bits, std::uint32_t group_size);
    /// The scale tensors attach_block_scales and attach_packed_int took out.
    [[nodiscard]] std::span<const st_tensor> block_scales() const noexcept { return scales_; }

    /// Reads rows [first_row, first_row + n_rows) of `t` (rows of `t.row_elems()` values) into `out` as
    /// floats (F8_E4M3 with block scales: dequantised). Errors: a dtype other than F32/F16/BF16/block-scaled
    /// F8_E4M3 (naming tensor and dtype), rows out of range, I/O.
    result<void> read_rows(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out);

private:
    struct state;
    explicit checkpoint(std::unique_ptr<state> s);
    result<void> add_file(const std::filesystem::path& path);
    result<void> read_fp8_rows(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out);
    result<void> read_packed_rows(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out);
    result<void> apply_scales(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out);

    std::unique_ptr<state> state_;
    std::vector<st_tensor> tensors_;
    std::vector<st_tensor> scales_;
    std::unordered_map<std::string, std::size_t> index_;
};

} // namespace sluice::convert
