// Opening a GGUF model: finding the parts of a split model, parsing each header and cross-checking them.
#include "runtime/gguf/model_files.hpp"

#include "runtime/gguf/try.hpp"

#include <charconv>
#include <cstdio>

namespace sluice::gguf {
namespace {

error split_error(const std::filesystem::path& path, std::string message) {
    return make_error(std::errc::bad_message, path.string() + ": " + std::move(message));
}

bool parse_5_digits(std::string_view s, std::uint32_t& out) {
    if (s.size() != 5) {
        return false;
    }
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

result<model_part> open_part(const std::filesystem::path& path, header_mode mode) {
    SLUICE_GGUF_TRY(auto src, file_source::open(path));
    auto header = parse_header(*src, mode);
    if (!header) {
        return header.error().with_context(path.string());
    }
    if (mode == header_mode::header_only) {
        return model_part{path, std::move(*header), io::file{}}; // never read: the data may not be there
    }
    SLUICE_GGUF_TRY(auto file, io::file::open(path.string()));
    if (file.size() != header->file_size) {
        return make_error(std::errc::bad_message, path.string() + ": file changed size while opening");
    }
    return model_part{path, std::move(*header), std::move(file)};
}

/// Checks split.count and split.no of part `index` of `count`.
result<void> check_split_keys(const model_part& part, std::uint32_t index, std::size_t count) {
    SLUICE_GGUF_TRY(const auto declared, part.header.kv.find_u32(keys::split_count));
    if (count == 1) {
        if (declared && *declared > 1) {
            return split_error(part.path, "split.count is " + std::to_string(*declared) +
                                              " but the file name does not follow NAME-0000N-of-0000M.gguf");
        }
        return {};
    }
    if (!declared || *declared != count) {
        return split_error(part.path, "split.count is " + (declared ? std::to_string(*declared) : "missing") +
                                          ", expected " + std::to_string(count));
    }
    SLUICE_GGUF_TRY(const auto no, part.header.kv.find_u32(keys::split_no));
    if (!no || *no != index) {
        return split_error(part.path, "split.no is " + (no ? std::to_string(*no) : "missing") + ", expected " +
                                          std::to_string(index));
    }
    return {};
}

} // namespace

std::optional<split_name> parse_split_name(const std::filesystem::path& path) {
    const std::string s = path.string();
    constexpr std::string_view ext = ".gguf";
    constexpr std::size_t tail = 1 + 5 + 4 + 5; // "-00001-of-00003"
    if (s.size() < ext.size() + tail || !std::string_view(s).ends_with(ext)) {
        return std::nullopt;
    }
    const std::string_view stem = std::string_view(s).substr(0, s.size() - ext.size());
    const std::string_view t = stem.substr(stem.size() - tail);
    split_name n;
    if (t[0] != '-' || t.substr(6, 4) != "-of-" || !parse_5_digits(t.substr(1, 5), n.number) ||
        !parse_5_digits(t.substr(10, 5), n.count) || n.number == 0 || n.number > n.count) {
        return std::nullopt;
    }
    n.prefix = std::string(stem.substr(0, stem.size() - tail));
    return n;
}

std::filesystem::path split_path(std::string_view prefix, std::uint32_t number, std::uint32_t count) {
    char tail[32];
    std::snprintf(tail, sizeof(tail), "-%05u-of-%05u.gguf", number, count);
    return std::string(prefix) + tail;
}

result<model_files> model_files::open(const std::filesystem::path& path, header_mode mode) {
    std::vector<model_part> parts;
    const auto split = parse_split_name(path);
    const std::uint32_t count = split ? split->count : 1;
    for (std::uint32_t i = 1; i <= count; ++i) {
        SLUICE_GGUF_TRY(auto part, open_part(split ? split_path(split->prefix, i, count) : path, mode));
        parts.push_back(std::move(part));
    }
    return from_parts(std::move(parts));
}

result<model_files> model_files::from_parts(std::vector<model_part> parts) {
    if (parts.empty()) {
        return make_error(std::errc::invalid_argument, "a model needs at least one file");
    }
    model_files m;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        SLUICE_GGUF_CHECK(check_split_keys(parts[i], static_cast<std::uint32_t>(i), parts.size()));
        for (tensor_info t : parts[i].header.tensors) {
            t.split = static_cast<std::uint32_t>(i);
            const auto [it, added] = m.by_name_.emplace(t.name, m.tensors_.size());
            if (!added) {
                return split_error(parts[i].path, "tensor " + t.name + " also appears in " +
                                                      parts[m.tensors_[it->second].split].path.string());
            }
            m.tensors_.push_back(std::move(t));
        }
    }
    if (parts.size() > 1 && parts.front().header.kv.contains(keys::split_tensors_count)) {
        SLUICE_GGUF_TRY(const auto total, parts.front().header.kv.get_u64(keys::split_tensors_count));
        if (total != m.tensors_.size()) {
            return split_error(parts.front().path, "split.tensors.count is " + std::to_string(total) + " but the " +
                                                       std::to_string(parts.size()) + " parts hold " +
                                                       std::to_string(m.tensors_.size()) + " tensors");
        }
    }
    m.parts_ = std::move(parts);
    return m;
}

const tensor_info* model_files::find_tensor(std::string_view name) const noexcept {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::string model_files::arch_key(std::string_view suffix) const {
    const auto arch = architecture();
    std::string key(arch ? *arch : std::string_view("unknown"));
    key += '.';
    key += suffix;
    return key;
}

} // namespace sluice::gguf
