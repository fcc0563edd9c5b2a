// A GGUF model on disk: one file or all parts of a split model, headers parsed and cross-checked.
#pragma once

#include "io/file.hpp"
#include "runtime/gguf/parser.hpp"
#include "sluice/error.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::gguf {

/// One file of a model: its path, parsed header and the descriptor tensor data is read through.
struct model_part {
    std::filesystem::path path;
    file_header header;
    io::file file; ///< opened by `model_files::open` (O_DIRECT where possible); closed for `from_parts`
};

/// Parsed name of a split file: NAME-0000N-of-0000M.gguf (N counted from 1).
struct split_name {
    std::string prefix; ///< path without "-0000N-of-0000M.gguf"
    std::uint32_t number = 0;
    std::uint32_t count = 0;
};

/// Recognises NAME-0000N-of-0000M.gguf (five digits each, 1 <= N <= M); nullopt for other names.
std::optional<split_name> parse_split_name(const std::filesystem::path& path);

/// The path of part `number` (from 1) of `count`: "<prefix>-0000N-of-0000M.gguf".
std::filesystem::path split_path(std::string_view prefix, std::uint32_t number, std::uint32_t count);

/// The headers of every file of a model, with one merged tensor table. Immutable after `open`, so
/// concurrent reads are safe. Tensor data is read through `read_tensor` (tensor_io.hpp), never mapped.
class model_files {
public:
    /// Opens a model. A path named NAME-0000N-of-0000M.gguf opens all M parts (any part may be given);
    /// `split.count`/`split.no` must agree with the names and tensor names must be unique across parts.
    /// Reads headers only. Errors are prefixed with the offending file's path.
    /// `header_only`: each file may be a prefix of the model (a partial download) that holds at least its header;
    /// the parts are not opened for reading (`read_tensor` fails), but the model can be inspected and planned.
    /// A file cut inside its header fails with `cut_header_errc` (parser.hpp).
    static result<model_files> open(const std::filesystem::path& path, header_mode mode = header_mode::whole_file);

    /// Builds a model from already parsed parts (ordered by split number) and runs the same checks.
    /// Parts without an open `file` can be inspected but not read.
    static result<model_files> from_parts(std::vector<model_part> parts);

    /// The files, ordered by split number (one element when the model is not split).
    [[nodiscard]] std::span<const model_part> parts() const noexcept { return parts_; }
    /// Metadata of the first part, which holds the model's keys.
    [[nodiscard]] const metadata& kv() const noexcept { return parts_.front().header.kv; }
    /// Every tensor of every part, in part order then file order; `split` names the part.
    [[nodiscard]] std::span<const tensor_info> tensors() const noexcept { return tensors_; }
    /// The tensor called `name`, or nullptr.
    [[nodiscard]] const tensor_info* find_tensor(std::string_view name) const noexcept;
    /// `general.architecture` (e.g. "qwen3moe").
    [[nodiscard]] result<std::string_view> architecture() const { return kv().get_string(keys::architecture); }
    /// A key in the architecture's namespace: arch_key("block_count") -> "qwen3moe.block_count".
    /// Uses "unknown" when the architecture key is missing.
    [[nodiscard]] std::string arch_key(std::string_view suffix) const;

private:
    struct name_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };

    std::vector<model_part> parts_;
    std::vector<tensor_info> tensors_;
    std::unordered_map<std::string, std::size_t, name_hash, std::equal_to<>> by_name_;
};

} // namespace sluice::gguf
