// The GGUF header parser. Every count is checked against the bytes left before anything is allocated,
// and every shape, size and offset is checked for overflow, alignment and overlap.
#include "runtime/gguf/parser.hpp"

#include "runtime/gguf/try.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_set>

namespace sluice::gguf {
namespace {

/// Smallest encoding of a tensor info: name length, n_dims, type, offset.
constexpr std::uint64_t min_tensor_info_bytes = 8 + 4 + 4 + 8;
/// Smallest encoding of a key/value pair: key length, one key byte, type, one value byte.
constexpr std::uint64_t min_kv_bytes = 8 + 1 + 4 + 1;
/// Elements vectors are grown to at first; larger arrays grow as they are read.
constexpr std::uint64_t max_reserve = 1 << 16;

error malformed(std::string message) {
    return make_error(std::errc::bad_message, std::move(message));
}

std::uint64_t min_encoded_size(value_type t) {
    if (t == value_type::string) {
        return 8;
    }
    if (t == value_type::array) {
        return 12;
    }
    return fixed_size(t);
}

/// The parts of a header, in file order (where a cut file ended).
enum class header_section { preamble, key_values, tensor_table };

class header_parser {
public:
    header_parser(byte_source& src, header_mode mode) : src_(src), mode_(mode) {}

    result<file_header> parse();

private:
    /// Notes whether `need` bytes are more than the source has left (the file may be cut); returns that.
    bool short_of(std::uint64_t need) noexcept {
        cut_ = cut_ || need > src_.remaining();
        return need > src_.remaining();
    }

    template <class T>
    result<T> read_pod() {
        T v{};
        short_of(sizeof(T));
        SLUICE_GGUF_CHECK(src_.read(std::as_writable_bytes(std::span<T>(&v, 1))));
        return v;
    }

    result<std::string> read_string();
    result<void> read_preamble(file_header& h, std::uint64_t& n_tensors, std::uint64_t& n_kv);
    result<void> read_kv(file_header& h, std::uint64_t index);
    template <class T>
    result<metadata_value> read_scalar();
    result<metadata_value> read_value(value_type type, int depth);
    result<metadata_array> read_array(int depth);
    template <class T>
    result<void> read_fixed_items(std::vector<T>& out, std::uint64_t count);
    template <class T>
    result<void> read_items(std::vector<T>& out, std::uint64_t count, value_type elem, int depth);
    result<std::uint32_t> read_alignment(const metadata& kv);
    result<tensor_info> read_tensor_info(std::uint64_t index, std::uint32_t alignment);
    result<void> read_shape(tensor_info& t);
    result<void> place_tensors(file_header& h);
    result<file_header> parse_all();
    error cut_error(const error& detail) const;

    byte_source& src_;
    header_mode mode_;
    bool cut_ = false; ///< a read or a count check ran past the end of the source
    header_section section_ = header_section::preamble;
    std::uint64_t index_ = 0, n_kv_ = 0, n_tensors_ = 0; ///< entry being read, and the counts
    std::string key_;                                    ///< the key being read (key-values section)
};

result<std::string> header_parser::read_string() {
    SLUICE_GGUF_TRY(const auto len, read_pod<std::uint64_t>());
    if (short_of(len)) {
        return malformed("string length " + std::to_string(len) + " exceeds remaining bytes (" +
                         std::to_string(src_.remaining()) + " left)");
    }
    std::string s(static_cast<std::size_t>(len), '\0');
    SLUICE_GGUF_CHECK(src_.read(std::as_writable_bytes(std::span<char>(s.data(), s.size()))));
    return s;
}

result<void> header_parser::read_preamble(file_header& h, std::uint64_t& n_tensors, std::uint64_t& n_kv) {
    SLUICE_GGUF_TRY(const auto magic, read_pod<std::uint32_t>());
    if (magic != gguf_magic) {
        return malformed("not a GGUF file (bad magic)");
    }
    SLUICE_GGUF_TRY(h.version, read_pod<std::uint32_t>());
    if (h.version == 1) {
        return malformed("GGUF version 1 is not supported (versions 2 and 3 are)");
    }
    if (h.version != 2 && h.version != 3) {
        if ((h.version & 0xFFFF) == 0) {
            return malformed("big-endian GGUF files are not supported");
        }
        return malformed("unsupported GGUF version " + std::to_string(h.version));
    }
    SLUICE_GGUF_TRY(n_tensors, read_pod<std::uint64_t>());
    SLUICE_GGUF_TRY(n_kv, read_pod<std::uint64_t>());
    if (mode_ == header_mode::header_only) {
        return {}; // the file may end early; the loops over the counts reserve at most max_reserve entries
    }
    if (n_kv > src_.remaining() / min_kv_bytes) {
        return malformed("metadata count " + std::to_string(n_kv) + " exceeds remaining bytes");
    }
    if (n_tensors > src_.remaining() / min_tensor_info_bytes) {
        return malformed("tensor count " + std::to_string(n_tensors) + " exceeds remaining bytes");
    }
    return {};
}

result<void> header_parser::read_kv(file_header& h, std::uint64_t index) {
    const std::string where = "metadata entry #" + std::to_string(index);
    auto key = read_string();
    if (!key) {
        return key.error().with_context(where + " key");
    }
    key_ = *key;
    if (key->empty() || key->size() > max_key_bytes) {
        return malformed(where + ": key length " + std::to_string(key->size()) + " is not in 1.." +
                         std::to_string(max_key_bytes));
    }
    if (!is_valid_utf8(*key)) {
        return malformed(where + ": key is not valid UTF-8");
    }
    const std::string context = "metadata key " + *key;
    auto raw_type = read_pod<std::uint32_t>();
    if (!raw_type) {
        return raw_type.error().with_context(context);
    }
    if (*raw_type >= value_type_count) {
        return malformed(context + ": unknown value type " + std::to_string(*raw_type));
    }
    auto value = read_value(static_cast<value_type>(*raw_type), 0);
    if (!value) {
        return value.error().with_context(context);
    }
    if (!h.kv.insert(std::move(*key), std::move(*value))) {
        return malformed(context + ": duplicate key");
    }
    return {};
}

template <class T>
result<void> header_parser::read_fixed_items(std::vector<T>& out, std::uint64_t count) {
    // The caller checked count * sizeof(T) <= remaining, so this allocation is bounded by the file size.
    out.resize(static_cast<std::size_t>(count));
    return src_.read(std::as_writable_bytes(std::span<T>(out)));
}

template <class T>
result<void> header_parser::read_items(std::vector<T>& out, std::uint64_t count, value_type elem, int depth) {
    if constexpr (std::is_same_v<T, bool>) {
        std::vector<std::uint8_t> raw;
        SLUICE_GGUF_CHECK(read_fixed_items(raw, count));
        out.assign(raw.begin(), raw.end());
        return {};
    } else if constexpr (std::is_arithmetic_v<T>) {
        return read_fixed_items(out, count);
    } else {
        out.reserve(static_cast<std::size_t>(std::min(count, max_reserve)));
        for (std::uint64_t i = 0; i < count; ++i) {
            auto v = read_value(elem, depth);
            if (!v) {
                return v.error().with_context("element " + std::to_string(i));
            }
            out.push_back(std::get<T>(std::move(v->data)));
        }
        return {};
    }
}

result<metadata_array> header_parser::read_array(int depth) {
    if (depth >= max_array_depth) {
        return malformed("arrays nested deeper than " + std::to_string(max_array_depth));
    }
    SLUICE_GGUF_TRY(const auto raw_elem, read_pod<std::uint32_t>());
    if (raw_elem >= value_type_count) {
        return malformed("unknown array element type " + std::to_string(raw_elem));
    }
    const auto elem = static_cast<value_type>(raw_elem);
    SLUICE_GGUF_TRY(const auto count, read_pod<std::uint64_t>());
    const std::uint64_t min_size = min_encoded_size(elem);
    if (count > src_.remaining() / min_size) {
        cut_ = true;
        return malformed("array count " + std::to_string(count) + " exceeds remaining bytes (" +
                         std::to_string(src_.remaining()) + " left, " + std::string(to_string(elem)) +
                         " elements take at least " + std::to_string(min_size) + " each)");
    }
    metadata_array arr;
    // Select the vector alternative whose index equals the element type id, then fill it.
    const auto select = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) -> result<void> {
        auto& items = arr.items.emplace<I>();
        return read_items(items, count, elem, depth + 1);
    };
    result<void> filled = make_error(std::errc::bad_message, "unreachable");
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((raw_elem == I ? (void)(filled = select(std::integral_constant<std::size_t, I>{})) : void()), ...);
    }
    (std::make_index_sequence<value_type_count>{});
    SLUICE_GGUF_CHECK(std::move(filled));
    return arr;
}

template <class T>
result<metadata_value> header_parser::read_scalar() {
    SLUICE_GGUF_TRY(const T v, read_pod<T>());
    return make_value<T>(v);
}

result<metadata_value> header_parser::read_value(value_type type, int depth) {
    switch (type) {
    case value_type::u8:
        return read_scalar<std::uint8_t>();
    case value_type::i8:
        return read_scalar<std::int8_t>();
    case value_type::u16:
        return read_scalar<std::uint16_t>();
    case value_type::i16:
        return read_scalar<std::int16_t>();
    case value_type::u32:
        return read_scalar<std::uint32_t>();
    case value_type::i32:
        return read_scalar<std::int32_t>();
    case value_type::f32:
        return read_scalar<float>();
    case value_type::u64:
        return read_scalar<std::uint64_t>();
    case value_type::i64:
        return read_scalar<std::int64_t>();
    case value_type::f64:
        return read_scalar<double>();
    case value_type::boolean: {
        SLUICE_GGUF_TRY(const auto b, read_pod<std::uint8_t>());
        return make_value<bool>(b != 0);
    }
    case value_type::string: {
        SLUICE_GGUF_TRY(auto s, read_string());
        return make_value<std::string>(std::move(s));
    }
    case value_type::array: {
        SLUICE_GGUF_TRY(auto a, read_array(depth));
        return make_value<metadata_array>(std::move(a));
    }
    }
    return malformed("unknown value type " + std::to_string(static_cast<std::uint32_t>(type)));
}

result<std::uint32_t> header_parser::read_alignment(const metadata& kv) {
    if (!kv.contains(keys::alignment)) {
        return default_alignment;
    }
    SLUICE_GGUF_TRY(const auto a, kv.get_u32(keys::alignment));
    if (!std::has_single_bit(a)) {
        return malformed("metadata key general.alignment: " + std::to_string(a) + " is not a non-zero power of two");
    }
    return a;
}

result<void> header_parser::read_shape(tensor_info& t) {
    SLUICE_GGUF_TRY(t.n_dims, read_pod<std::uint32_t>());
    if (t.n_dims > max_dims) {
        return malformed("n_dims " + std::to_string(t.n_dims) + " exceeds " + std::to_string(max_dims));
    }
    constexpr auto max_dim = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    t.n_elements = 1;
    for (std::uint32_t d = 0; d < t.n_dims; ++d) {
        SLUICE_GGUF_TRY(t.ne[d], read_pod<std::uint64_t>());
        if (t.ne[d] == 0 || t.ne[d] > max_dim) {
            return malformed("dimension " + std::to_string(d) + " is " + std::to_string(t.ne[d]) +
                             " (must be in 1..2^63-1)");
        }
        if (t.n_elements > max_dim / t.ne[d]) {
            return malformed("element count of shape " + shape_string(t) + " overflows");
        }
        t.n_elements *= t.ne[d];
    }
    return {};
}

result<tensor_info> header_parser::read_tensor_info(std::uint64_t index, std::uint32_t alignment) {
    tensor_info t;
    auto name = read_string();
    if (!name) {
        return name.error().with_context("tensor info #" + std::to_string(index) + " name");
    }
    if (name->empty() || !is_valid_utf8(*name)) {
        return malformed("tensor info #" + std::to_string(index) + ": name is empty or not valid UTF-8");
    }
    t.name = std::move(*name);
    const std::string context = "tensor " + t.name;
    if (auto r = read_shape(t); !r) {
        return r.error().with_context(context);
    }
    auto raw_type = read_pod<std::uint32_t>();
    if (!raw_type) {
        return raw_type.error().with_context(context);
    }
    const auto traits = kernels::find_quant_traits(*raw_type);
    if (!traits) {
        if (const auto removed = kernels::removed_quant_type_name(*raw_type)) {
            return malformed("unsupported type " + std::to_string(*raw_type) + " (" + std::string(*removed) +
                             ", removed from GGUF by llama.cpp: convert the model again) in tensor " + t.name);
        }
        return malformed("unsupported type " + std::to_string(*raw_type) + " (not a GGUF type id) in tensor " + t.name);
    }
    t.type = traits->type;
    if (t.ne[0] % traits->block_elems != 0) {
        return malformed(context + ": row of " + std::to_string(t.ne[0]) + " values is not a multiple of the " +
                         std::string(traits->name) + " block size " + std::to_string(traits->block_elems));
    }
    const std::uint64_t blocks = t.n_elements / traits->block_elems;
    if (blocks > std::numeric_limits<std::uint64_t>::max() / traits->block_bytes) {
        return malformed(context + ": byte size of shape " + shape_string(t) + " overflows");
    }
    t.bytes = blocks * traits->block_bytes;
    auto offset = read_pod<std::uint64_t>();
    if (!offset) {
        return offset.error().with_context(context);
    }
    if (*offset % alignment != 0) {
        return malformed(context + ": offset " + std::to_string(*offset) + " is not a multiple of the alignment " +
                         std::to_string(alignment));
    }
    t.offset = *offset; // relative until place_tensors
    return t;
}

result<void> header_parser::place_tensors(file_header& h) {
    const std::uint64_t pos = src_.position();
    const std::uint64_t pad = (h.alignment - pos % h.alignment) % h.alignment;
    h.data_offset = pos + pad; // pos <= file size and pad < 2^32: no overflow
    if (h.tensors.empty()) {
        return {}; // vocabulary-only files may end right after the header, without padding
    }
    const bool whole = mode_ == header_mode::whole_file;
    if (whole && h.data_offset > h.file_size) {
        return malformed("data section starts at " + std::to_string(h.data_offset) + ", past end of file (size " +
                         std::to_string(h.file_size) + ")");
    }
    // header_only: the data section may be absent; offsets need only stay inside 64 bits.
    const std::uint64_t data_size =
        whole ? h.file_size - h.data_offset : std::numeric_limits<std::uint64_t>::max() - h.data_offset;
    for (auto& t : h.tensors) {
        if (t.offset > data_size || t.bytes > data_size - t.offset) {
            const bool fits = t.offset <= std::numeric_limits<std::uint64_t>::max() - h.data_offset;
            const std::string at = fits ? std::to_string(h.data_offset + t.offset)
                                        : std::to_string(h.data_offset) + " + " + std::to_string(t.offset);
            return malformed("tensor " + t.name + ": data extends past end of file (offset " + at + " + " +
                             std::to_string(t.bytes) + " bytes > file size " + std::to_string(h.file_size) + ")");
        }
        t.offset += h.data_offset;
    }
    std::vector<const tensor_info*> order;
    order.reserve(h.tensors.size());
    for (const auto& t : h.tensors) {
        order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < order.size(); ++i) {
        const auto* prev = order[i - 1];
        const auto* cur = order[i];
        if (prev->offset + prev->bytes > cur->offset) {
            return malformed("tensors " + prev->name + " and " + cur->name + " overlap (" + prev->name + " is at " +
                             std::to_string(prev->offset) + " + " + std::to_string(prev->bytes) + " bytes, " +
                             cur->name + " at " + std::to_string(cur->offset) + ")");
        }
    }
    return {};
}

error header_parser::cut_error(const error& detail) const {
    std::string m = "the file ends inside its GGUF header (" + std::to_string(src_.size()) + " bytes): cut in ";
    const auto tensors = n_tensors_ == 1 ? std::string("1 tensor") : std::to_string(n_tensors_) + " tensors";
    switch (section_) {
    case header_section::preamble:
        m += "the preamble (magic, version and counts: the first 24 bytes); missing: the key-values and the tensor "
             "table";
        break;
    case header_section::key_values:
        m += "the key-values at entry #" + std::to_string(index_) + " of " + std::to_string(n_kv_) +
             (key_.empty() ? std::string() : " (" + key_ + ")") + "; missing: the rest of the key-values and the " +
             "tensor table of " + tensors;
        break;
    case header_section::tensor_table:
        m += "the tensor table at tensor #" + std::to_string(index_) + " of " + std::to_string(n_tensors_) +
             "; missing: the rest of the tensor table (" + std::to_string(n_tensors_ - index_) + " of " + tensors +
             ")";
        break;
    }
    m += ". Fetch more of the file: a large vocabulary can make the header tens of MiB (" + detail.message + ")";
    return make_error(cut_header_errc, std::move(m));
}

result<file_header> header_parser::parse() {
    auto h = parse_all();
    if (!h && cut_ && mode_ == header_mode::header_only) {
        return cut_error(h.error());
    }
    return h;
}

result<file_header> header_parser::parse_all() {
    file_header h;
    h.file_size = src_.size();
    SLUICE_GGUF_CHECK(read_preamble(h, n_tensors_, n_kv_));
    section_ = header_section::key_values;
    for (index_ = 0; index_ < n_kv_; ++index_) {
        key_.clear();
        SLUICE_GGUF_CHECK(read_kv(h, index_));
    }
    SLUICE_GGUF_TRY(h.alignment, read_alignment(h.kv));
    // n_tensors was bounded by the bytes left (or max_reserve), so this reservation is bounded.
    h.tensors.reserve(static_cast<std::size_t>(std::min(n_tensors_, max_reserve)));
    std::unordered_set<std::string_view> names;
    section_ = header_section::tensor_table;
    for (index_ = 0; index_ < n_tensors_; ++index_) {
        SLUICE_GGUF_TRY(auto t, read_tensor_info(index_, h.alignment));
        h.tensors.push_back(std::move(t));
    }
    for (const auto& t : h.tensors) {
        if (!names.insert(t.name).second) {
            return malformed("duplicate tensor name " + t.name);
        }
    }
    SLUICE_GGUF_CHECK(place_tensors(h));
    return h;
}

} // namespace

result<file_header> parse_header(byte_source& src, header_mode mode) {
    return header_parser(src, mode).parse();
}

result<file_header> parse_header(std::span<const std::byte> bytes) {
    span_source src(bytes);
    return parse_header(src, header_mode::whole_file);
}

} // namespace sluice::gguf
