// Safetensors checkpoints: header parsing with checked offsets, shard discovery, row reads widened to float.
#include "runtime/convert/safetensors.hpp"

#include "io/reader.hpp"
#include "kernels/quant.hpp"
#include "runtime/convert/fp8.hpp"
#include "runtime/convert/text_file.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>

namespace sluice::convert {

namespace json = boost::json;

namespace {

/// The safetensors format caps the header at 100 MB.
constexpr std::uint64_t max_header_bytes = std::uint64_t{100} << 20;

error bad_file(std::string message) {
    return make_error(std::errc::bad_message, std::move(message));
}

struct dtype_info {
    std::string_view name;
    st_dtype dtype;
    std::uint32_t size;
};

constexpr dtype_info dtypes[] = {
    {"F32", st_dtype::f32, 4},    {"F16", st_dtype::f16, 2},         {"BF16", st_dtype::bf16, 2},
    {"F64", st_dtype::other, 8},  {"I64", st_dtype::other, 8},       {"U64", st_dtype::other, 8},
    {"I32", st_dtype::other, 4},  {"U32", st_dtype::other, 4},       {"I16", st_dtype::other, 2},
    {"U16", st_dtype::other, 2},  {"I8", st_dtype::other, 1},        {"U8", st_dtype::other, 1},
    {"BOOL", st_dtype::other, 1}, {"F8_E4M3", st_dtype::f8_e4m3, 1}, {"F8_E5M2", st_dtype::other, 1},
};

const dtype_info* find_dtype(std::string_view name) {
    for (const auto& d : dtypes) {
        if (d.name == name) {
            return &d;
        }
    }
    return nullptr;
}

std::optional<std::uint64_t> to_u64(const json::value& v) {
    if (v.is_uint64()) {
        return v.get_uint64();
    }
    if (v.is_int64() && v.get_int64() >= 0) {
        return static_cast<std::uint64_t>(v.get_int64());
    }
    return std::nullopt;
}

/// One header entry to a tensor; `base` is the data section's absolute offset, `data_bytes` its size.
result<st_tensor> parse_entry(std::string_view name, const json::value& v, std::uint64_t base,
                              std::uint64_t data_bytes) {
    const std::string context = "tensor " + std::string(name) + ": ";
    if (!v.is_object()) {
        return bad_file(context + "header entry is not an object");
    }
    const auto& o = v.get_object();
    const auto* dtype = o.if_contains("dtype");
    const auto* shape = o.if_contains("shape");
    const auto* offsets = o.if_contains("data_offsets");
    if (dtype == nullptr || !dtype->is_string() || shape == nullptr || !shape->is_array() || offsets == nullptr ||
        !offsets->is_array() || offsets->get_array().size() != 2) {
        return bad_file(context + "header entry needs dtype, shape and data_offsets [begin, end]");
    }
    st_tensor t;
    t.name = std::string(name);
    t.dtype_name = std::string(dtype->get_string());
    const dtype_info* info = find_dtype(t.dtype_name);
    t.dtype = info ? info->dtype : st_dtype::other;
    std::uint64_t elems = 1;
    bool overflow = false;
    for (const auto& d : shape->get_array()) {
        const auto n = to_u64(d);
        if (!n) {
            return bad_file(context + "shape " + json::serialize(*shape) + " is not a list of non-negative integers");
        }
        t.shape.push_back(*n);
        if (*n != 0 && elems > std::numeric_limits<std::uint64_t>::max() / *n) {
            overflow = true;
        }
        elems *= *n;
    }
    const auto begin = to_u64(offsets->get_array()[0]);
    const auto end = to_u64(offsets->get_array()[1]);
    if (!begin || !end || *begin > *end) {
        return bad_file(context + "data_offsets " + json::serialize(*offsets) + " are not an ordered pair");
    }
    if (*end > data_bytes) {
        return bad_file(context + "data_offsets end " + std::to_string(*end) + " is past the end of the data (" +
                        std::to_string(data_bytes) + " bytes)");
    }
    if (info != nullptr && (overflow || elems > std::numeric_limits<std::uint64_t>::max() / info->size ||
                            elems * info->size != *end - *begin)) {
        return bad_file(context + "data_offsets span " + std::to_string(*end - *begin) + " bytes but " + t.dtype_name +
                        " " + shape_string(t.shape) + " needs " +
                        (overflow ? std::string("more than 2^64") : std::to_string(elems * info->size)));
    }
    t.offset = base + *begin;
    t.bytes = *end - *begin;
    return t;
}

} // namespace

std::uint64_t st_tensor::rows() const noexcept {
    std::uint64_t n = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) {
        n *= shape[i];
    }
    return n;
}

std::string shape_string(std::span<const std::uint64_t> shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        s += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return s + "]";
}

result<std::vector<st_tensor>> parse_safetensors_header(std::string_view header_json, std::uint64_t data_start,
                                                        std::uint64_t file_size, std::uint32_t file_index) {
    if (data_start > file_size) {
        return bad_file("header runs past the end of the file");
    }
    boost::system::error_code ec;
    const json::value root = json::parse(header_json, ec);
    if (ec) {
        return bad_file("header is not valid JSON: " + ec.message());
    }
    if (!root.is_object()) {
        return bad_file("header is not a JSON object");
    }
    std::vector<st_tensor> out;
    for (const auto& [key, value] : root.get_object()) {
        if (key == "__metadata__") {
            continue;
        }
        auto t = parse_entry(key, value, data_start, file_size - data_start);
        if (!t) {
            return t.error();
        }
        t->file = file_index;
        out.push_back(std::move(*t));
    }
    return out;
}

/// The files and the reader serving them; reads block the caller by running a private io_context.
struct checkpoint::state {
    boost::asio::io_context ctx;
    std::unique_ptr<io::reader> reader;
    std::vector<io::file> files;
    std::vector<std::byte> raw; ///< staging buffer for one read

    result<void> read(const io::file& f, std::uint64_t offset, std::span<std::byte> dest) {
        std::optional<result<void>> outcome;
        if (ctx.stopped()) {
            ctx.restart();
        }
        boost::asio::co_spawn(ctx, reader->read_at(f, offset, dest), [&](std::exception_ptr e, result<void> r) {
            if (e) {
                outcome = make_error(std::errc::io_error, f.path() + ": read failed with an exception");
            } else {
                outcome = std::move(r);
            }
        });
        // The guard keeps run_one waiting while the read is with the kernel or the pread pool.
        auto guard = boost::asio::make_work_guard(ctx);
        while (!outcome) {
            if (ctx.stopped()) {
                ctx.restart(); // a previous call ran out of work
            }
            ctx.run_one();
        }
        return *outcome;
    }
};

checkpoint::checkpoint(std::unique_ptr<state> s) : state_(std::move(s)) {}
checkpoint::checkpoint(checkpoint&&) noexcept = default;
checkpoint& checkpoint::operator=(checkpoint&&) noexcept = default;
checkpoint::~checkpoint() = default;

const st_tensor* checkpoint::find(std::string_view name) const {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

result<void> checkpoint::add_file(const std::filesystem::path& path) {
    auto f = io::file::open(path.string(), io::open_mode::buffered);
    if (!f) {
        return f.error();
    }
    const std::string where = path.filename().string();
    if (f->size() < 8) {
        return bad_file(where + ": file of " + std::to_string(f->size()) + " bytes is too short for a header");
    }
    std::byte len_bytes[8];
    if (auto r = state_->read(*f, 0, len_bytes); !r) {
        return r.error();
    }
    std::uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) {
        header_len = (header_len << 8) | static_cast<std::uint8_t>(len_bytes[i]);
    }
    if (header_len > max_header_bytes || header_len > f->size() - 8) {
        return bad_file(where + ": header length " + std::to_string(header_len) + " is past the end of the file (" +
                        std::to_string(f->size()) + " bytes) or over 100 MB");
    }
    std::string header(header_len, '\0');
    if (auto r = state_->read(*f, 8, std::as_writable_bytes(std::span(header))); !r) {
        return r.error();
    }
    const auto file_index = static_cast<std::uint32_t>(state_->files.size());
    auto parsed = parse_safetensors_header(header, 8 + header_len, f->size(), file_index);
    if (!parsed) {
        return parsed.error().with_context(where);
    }
    for (auto& t : *parsed) {
        if (index_.contains(t.name)) {
            return bad_file(where + ": tensor " + t.name + " appears in more than one file");
        }
        index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }
    state_->files.push_back(std::move(*f));
    return {};
}

result<checkpoint> checkpoint::open_files(std::span<const std::filesystem::path> files) {
    auto s = std::make_unique<state>();
    auto reader = io::make_reader(s->ctx.get_executor(), {.queue_depth = 8, .pread_threads = 2});
    if (!reader) {
        return reader.error();
    }
    s->reader = std::move(*reader);
    checkpoint c(std::move(s));
    for (const auto& p : files) {
        if (auto r = c.add_file(p); !r) {
            return r.error();
        }
    }
    return c;
}

namespace {

/// Shard file names of an index json, in first-use order, and the tensor each name must hold.
struct shard_index {
    std::vector<std::string> files;
    std::vector<std::pair<std::string, std::string>> weight_map; ///< tensor -> file
};

result<shard_index> read_index(const std::filesystem::path& path) {
    auto text = read_text_file(path);
    if (!text) {
        return text.error();
    }
    boost::system::error_code ec;
    const json::value root = json::parse(*text, ec);
    const json::value* map = ec || !root.is_object() ? nullptr : root.get_object().if_contains("weight_map");
    if (map == nullptr || !map->is_object()) {
        return bad_file(path.filename().string() + ": not JSON with a weight_map object" +
                        (ec ? " (" + ec.message() + ")" : ""));
    }
    shard_index out;
    for (const auto& [tensor, file] : map->get_object()) {
        if (!file.is_string() || file.get_string().empty() || file.get_string().find('/') != json::string::npos) {
            return bad_file(path.filename().string() + ": weight_map entry for " + std::string(tensor) +
                            " is not a file name");
        }
        const std::string name(file.get_string());
        if (std::find(out.files.begin(), out.files.end(), name) == out.files.end()) {
            out.files.push_back(name);
        }
        out.weight_map.emplace_back(std::string(tensor), name);
    }
    return out;
}

} // namespace

result<checkpoint> checkpoint::open(const std::filesystem::path& dir) {
    const auto index_path = dir / "model.safetensors.index.json";
    std::error_code ec;
    if (!std::filesystem::exists(index_path, ec)) {
        const std::filesystem::path single[] = {dir / "model.safetensors"};
        if (!std::filesystem::exists(single[0], ec)) {
            return make_error(std::errc::no_such_file_or_directory,
                              dir.string() + ": neither model.safetensors nor model.safetensors.index.json found");
        }
        return open_files(single);
    }
    auto index = read_index(index_path);
    if (!index) {
        return index.error();
    }
    std::vector<std::filesystem::path> files;
    for (const auto& f : index->files) {
        files.push_back(dir / f);
    }
    auto c = open_files(files);
    if (!c) {
        return c.error();
    }
    for (const auto& [tensor, file] : index->weight_map) {
        const st_tensor* t = c->find(tensor);
        if (t == nullptr || files[t->file].filename() != file) {
            return bad_file("model.safetensors.index.json: tensor " + tensor + " is not in " + file);
        }
    }
    return c;
}

result<void> checkpoint::attach_block_scales(std::uint32_t block_rows, std::uint32_t block_cols) {
    constexpr std::string_view suffix = "weight_scale_inv";
    if (block_rows == 0 || block_cols == 0) {
        return make_error(std::errc::invalid_argument, "FP8 block size must be positive");
    }
    // Check every scale against its weight first (find() indexes tensors_ as it is), then split the list.
    std::vector<st_tensor> kept;
    for (const auto& t : tensors_) {
        if (!t.name.ends_with(suffix)) {
            continue;
        }
        const std::string weight = t.name.substr(0, t.name.size() - suffix.size()) + "weight";
        const st_tensor* w = find(weight);
        if (w == nullptr) {
            return bad_file("tensor " + t.name + ": block scales without a tensor " + weight);
        }
        if (w->dtype != st_dtype::f8_e4m3 || w->shape.size() != 2) {
            return bad_file("tensor " + weight + ": block scales need a 2-D F8_E4M3 matrix, found " + w->dtype_name +
                            " " + shape_string(w->shape));
        }
        const std::uint64_t expect[2] = {(w->shape[0] + block_rows - 1) / block_rows,
                                         (w->shape[1] + block_cols - 1) / block_cols};
        if (t.dtype != st_dtype::f32 || t.shape.size() != 2 || t.shape[0] != expect[0] || t.shape[1] != expect[1]) {
            return bad_file("tensor " + t.name + ": expected F32 " + shape_string(expect) + " for blocks of " +
                            std::to_string(block_rows) + "x" + std::to_string(block_cols) + " of " + weight + " " +
                            shape_string(w->shape) + ", found " + t.dtype_name + " " + shape_string(t.shape));
        }
    }
    for (auto& t : tensors_) {
        (t.name.ends_with(suffix) ? scales_ : kept).push_back(std::move(t));
    }
    tensors_ = std::move(kept);
    index_.clear();
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
        index_.emplace(tensors_[i].name, i);
    }
    for (std::size_t i = 0; i < scales_.size(); ++i) {
        const auto& name = scales_[i].name;
        auto& w = tensors_[index_.at(name.substr(0, name.size() - suffix.size()) + "weight")];
        w.block_scale = static_cast<std::int32_t>(i);
        w.block_rows = block_rows;
        w.block_cols = block_cols;
    }
    for (const auto& t : tensors_) {
        if (t.dtype == st_dtype::f8_e4m3 && t.block_scale < 0) {
            return bad_file("tensor " + t.name + ": F8_E4M3 without a " + t.name + "_scale_inv block-scale tensor");
        }
    }
    return {};
}

result<void> checkpoint::apply_scales(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out) {
    const st_tensor& scale = scales_[static_cast<std::size_t>(t.block_scale)];
    const std::uint64_t first_block = first_row / t.block_rows;
    const std::uint64_t last_block = (first_row + n_rows - 1) / t.block_rows;
    std::vector<float> scales((last_block - first_block + 1) * scale.row_elems());
    if (auto r = read_rows(scale, first_block, last_block - first_block + 1, scales.data()); !r) {
        return r;
    }
    apply_block_scales(out, first_row, n_rows, t.row_elems(), scales.data(), scale.row_elems(), t.block_rows,
                       t.block_cols);
    return {};
}

result<void> checkpoint::read_fp8_rows(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out) {
    const std::uint64_t cols = t.row_elems();
    std::vector<std::byte> raw(n_rows * cols);
    if (auto r = state_->read(state_->files[t.file], t.offset + first_row * cols, raw); !r) {
        return r.error().with_context("tensor " + t.name);
    }
    fp8_e4m3_to_float(reinterpret_cast<const std::uint8_t*>(raw.data()), out, raw.size());
    return apply_scales(t, first_row, n_rows, out);
}

result<void> checkpoint::read_packed_rows(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows,
                                          float* out) {
    const std::uint64_t cols = t.row_elems();
    const std::uint64_t words = (cols * t.packed_bits + 31) / 32;
    std::vector<std::byte> raw(n_rows * words * 4);
    if (auto r = state_->read(state_->files[t.file], t.offset + first_row * words * 4, raw); !r) {
        return r.error().with_context("tensor " + t.name);
    }
    const std::uint32_t mask = (1u << t.packed_bits) - 1;
    const int offset = 1 << (t.packed_bits - 1);
    const std::uint32_t per_word = 32 / t.packed_bits;
    for (std::uint64_t r = 0; r < n_rows; ++r) {
        const std::byte* row = raw.data() + r * words * 4;
        for (std::uint64_t c = 0; c < cols; ++c) {
            const std::byte* w = row + (c / per_word) * 4;
            const std::uint32_t word =
                std::to_integer<std::uint32_t>(w[0]) | std::to_integer<std::uint32_t>(w[1]) << 8 |
                std::to_integer<std::uint32_t>(w[2]) << 16 | std::to_integer<std::uint32_t>(w[3]) << 24;
            const auto q = static_cast<int>((word >> ((c % per_word) * t.packed_bits)) & mask);
            out[r * cols + c] = static_cast<float>(q - offset);
        }
    }
    return apply_scales(t, first_row, n_rows, out);
}

result<void> checkpoint::attach_packed_int(std::uint32_t bits, std::uint32_t group_size) {
    constexpr std::string_view packed_suffix = "weight_packed";
    if (bits != 4 && bits != 8) {
        return make_error(std::errc::not_supported, "packed integer weights of " + std::to_string(bits) +
                                                        " bits are not supported (4 and 8 are)");
    }
    if (group_size == 0) {
        return make_error(std::errc::invalid_argument, "packed integer weights: group size must be positive");
    }
    std::vector<st_tensor> assembled;
    std::vector<std::string> parts;
    for (const auto& t : tensors_) {
        if (!t.name.ends_with(packed_suffix)) {
            continue;
        }
        const std::string base = t.name.substr(0, t.name.size() - packed_suffix.size());
        const st_tensor* scale = find(base + "weight_scale");
        const st_tensor* shape = find(base + "weight_shape");
        if (find(base + "weight_zero_point") != nullptr) {
            return make_error(std::errc::not_supported,
                              "tensor " + base + "weight_zero_point: asymmetric packed weights are not supported");
        }
        if (scale == nullptr || shape == nullptr || find(base + "weight") != nullptr) {
            return bad_file("tensor " + t.name + ": needs " + base + "weight_scale and " + base +
                            "weight_shape, and no " + base + "weight beside it");
        }
        if (shape->dtype_name != "I64" || shape->shape != std::vector<std::uint64_t>{2}) {
            return bad_file("tensor " + shape->name + ": expected I64 [2], found " + shape->dtype_name + " " +
                            shape_string(shape->shape));
        }
        std::byte dims_raw[16];
        if (auto r = state_->read(state_->files[shape->file], shape->offset, dims_raw); !r) {
            return r.error().with_context("tensor " + shape->name);
        }
        std::uint64_t dims[2] = {0, 0};
        for (int d = 0; d < 2; ++d) {
            for (int b = 7; b >= 0; --b) {
                dims[d] = (dims[d] << 8) | std::to_integer<std::uint64_t>(dims_raw[d * 8 + b]);
            }
        }
        const std::uint64_t words = (dims[1] * bits + 31) / 32;
        if (dims[0] == 0 || dims[1] == 0 || dims[1] > (std::uint64_t{1} << 32) || t.dtype_name != "I32" ||
            t.shape != std::vector<std::uint64_t>{dims[0], words}) {
            return bad_file("tensor " + t.name + ": expected I32 " + shape_string(std::vector{dims[0], words}) +
                            " for " + shape_string(dims) + " at " + std::to_string(bits) + " bits, found " +
                            t.dtype_name + " " + shape_string(t.shape));
        }
        const std::uint64_t groups = (dims[1] + group_size - 1) / group_size;
        const bool float_scale =
            scale->dtype == st_dtype::f32 || scale->dtype == st_dtype::f16 || scale->dtype == st_dtype::bf16;
        if (!float_scale || scale->shape != std::vector<std::uint64_t>{dims[0], groups}) {
            return bad_file("tensor " + scale->name + ": expected F32/F16/BF16 " +
                            shape_string(std::vector{dims[0], groups}) + ", found " + scale->dtype_name + " " +
                            shape_string(scale->shape));
        }
        st_tensor w = t;
        w.name = base + "weight";
        w.dtype = st_dtype::int_packed;
        w.dtype_name = "I32 (int" + std::to_string(bits) + " packed)";
        w.shape = {dims[0], dims[1]};
        w.packed_bits = bits;
        w.block_rows = 1;
        w.block_cols = group_size;
        w.block_scale = static_cast<std::int32_t>(scales_.size());
        scales_.push_back(*scale);
        assembled.push_back(std::move(w));
        parts.insert(parts.end(), {t.name, scale->name, shape->name});
    }
    std::vector<st_tensor> kept;
    for (auto& t : tensors_) {
        if (std::find(parts.begin(), parts.end(), t.name) == parts.end()) {
            kept.push_back(std::move(t));
        }
    }
    for (auto& w : assembled) {
        kept.push_back(std::move(w));
    }
    tensors_ = std::move(kept);
    index_.clear();
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
        index_.emplace(tensors_[i].name, i);
    }
    return {};
}

result<void> checkpoint::read_rows(const st_tensor& t, std::uint64_t first_row, std::uint64_t n_rows, float* out) {
    const bool scaled_fp8 = t.dtype == st_dtype::f8_e4m3 && t.block_scale >= 0;
    if (t.dtype == st_dtype::other || (t.dtype == st_dtype::f8_e4m3 && !scaled_fp8)) {
        return make_error(
            std::errc::not_supported,
            "tensor " + t.name + ": dtype " + t.dtype_name +
                " is not supported (F32, F16, BF16, F8_E4M3 with weight_scale_inv block scales, and packed int4/int8 "
                "with group scales are)");
    }
    if (first_row > t.rows() || n_rows > t.rows() - first_row) {
        return make_error(std::errc::invalid_argument, "tensor " + t.name + ": rows out of range");
    }
    if (n_rows * t.row_elems() == 0) {
        return {};
    }
    if (scaled_fp8) {
        return read_fp8_rows(t, first_row, n_rows, out);
    }
    if (t.dtype == st_dtype::int_packed) {
        return read_packed_rows(t, first_row, n_rows, out);
    }
    const std::uint64_t elem = t.dtype == st_dtype::f32 ? 4 : 2;
    const std::uint64_t n = n_rows * t.row_elems();
    const std::uint64_t offset = t.offset + first_row * t.row_elems() * elem;
    if (t.dtype == st_dtype::f32) {
        if (auto r = state_->read(state_->files[t.file], offset, {reinterpret_cast<std::byte*>(out), n * 4}); !r) {
            return r.error().with_context("tensor " + t.name);
        }
        return {};
    }
    state_->raw.resize(n * 2);
    if (auto r = state_->read(state_->files[t.file], offset, state_->raw); !r) {
        return r.error().with_context("tensor " + t.name);
    }
    const auto type = t.dtype == st_dtype::f16 ? kernels::quant_type::f16 : kernels::quant_type::bf16;
    kernels::dequantize_row(type, state_->raw.data(), out, n);
    return {};
}

} // namespace sluice::convert
