// The routing recording's file format: header and token records encoded little-endian, a checked reader and an
// appending writer.
#include "runtime/experts/routing_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sluice::experts {
namespace {

static_assert(std::endian::native == std::endian::little, "the format is little-endian, as is every target");

// Header fields after the magic, at fixed offsets.
constexpr std::size_t off_version = 8;
constexpr std::size_t off_header_bytes = 12;
constexpr std::size_t off_layers = 16;
constexpr std::size_t off_experts = 20;
constexpr std::size_t off_top_k = 24;
constexpr std::size_t off_name_bytes = 28;
constexpr std::size_t off_tokens = 32;
constexpr std::size_t fixed_header_bytes = 40;

template <class T>
void put(std::vector<std::byte>& out, T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

template <class T>
T get(std::span<const std::byte> b, std::size_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof(T));
    return v;
}

result<void> write_all(int fd, const std::byte* data, std::size_t n, off_t at, const std::filesystem::path& path) {
    while (n > 0) {
        const auto w = at < 0 ? ::write(fd, data, n) : ::pwrite(fd, data, n, at);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return make_errno_error(errno, path.string() + ": writing the routing recording");
        }
        data += w;
        n -= static_cast<std::size_t>(w);
        if (at >= 0) {
            at += w;
        }
    }
    return {};
}

// The header's fields checked against the format's limits.
result<routing_header> parse_header(std::span<const std::byte> b, std::size_t& records_at) {
    if (b.size() < fixed_header_bytes) {
        return make_error(std::errc::invalid_argument, "truncated header: " + std::to_string(b.size()) +
                                                           " bytes, a routing recording starts with at least " +
                                                           std::to_string(fixed_header_bytes));
    }
    if (std::memcmp(b.data(), routing_magic, sizeof(routing_magic)) != 0) {
        return make_error(std::errc::invalid_argument, "not a routing recording (magic is not \"SLROUTE\")");
    }
    const auto version = get<std::uint32_t>(b, off_version);
    if (version != 1 && version != routing_version) {
        return make_error(std::errc::not_supported, "version " + std::to_string(version) +
                                                        " is not supported (this build reads versions 1 to " +
                                                        std::to_string(routing_version) + ")");
    }
    routing_header h;
    h.version = version;
    h.geometry = {get<std::uint32_t>(b, off_layers), get<std::uint32_t>(b, off_experts), get<std::uint32_t>(b, off_top_k)};
    const auto& g = h.geometry;
    if (g.layers == 0 || g.layers > routing_max_layers) {
        return make_error(std::errc::invalid_argument, "layers " + std::to_string(g.layers) + " is not in 1.." +
                                                           std::to_string(routing_max_layers));
    }
    if (g.experts == 0 || g.experts >= no_expert) {
        return make_error(std::errc::invalid_argument,
                          "experts " + std::to_string(g.experts) + " is not in 1.." + std::to_string(no_expert - 1));
    }
    if (g.top_k == 0 || g.top_k > g.experts || g.top_k > routing_max_top_k) {
        return make_error(std::errc::invalid_argument, "top_k " + std::to_string(g.top_k) + " is not in 1..min(" +
                                                           std::to_string(g.experts) + ", " +
                                                           std::to_string(routing_max_top_k) + ")");
    }
    const auto name_bytes = get<std::uint32_t>(b, off_name_bytes);
    if (name_bytes > routing_max_name) {
        return make_error(std::errc::invalid_argument, "model name of " + std::to_string(name_bytes) +
                                                           " bytes is longer than " + std::to_string(routing_max_name));
    }
    const auto header_bytes = get<std::uint32_t>(b, off_header_bytes);
    if (header_bytes != routing_header_bytes(name_bytes)) {
        return make_error(std::errc::invalid_argument, "header_bytes " + std::to_string(header_bytes) + " should be " +
                                                           std::to_string(routing_header_bytes(name_bytes)));
    }
    if (b.size() < header_bytes) {
        return make_error(std::errc::invalid_argument, "truncated header: the model name ends past the file's end");
    }
    h.model_name.assign(reinterpret_cast<const char*>(b.data()) + fixed_header_bytes, name_bytes);
    h.tokens = get<std::uint64_t>(b, off_tokens);
    records_at = header_bytes;
    return h;
}

} // namespace

std::string to_string(const routing_geometry& g) {
    return std::to_string(g.layers) + " layers x " + std::to_string(g.experts) + " experts, top-" +
           std::to_string(g.top_k);
}

std::size_t routing_record_bytes(const routing_geometry& g, std::uint32_t version) noexcept {
    return 8 + std::size_t{g.layers} * g.top_k * (version >= 2 ? 2 + 4 + 2 + 2 : 2 + 4 + 2);
}

std::size_t routing_header_bytes(std::size_t name_bytes) noexcept { return fixed_header_bytes + name_bytes; }

std::vector<std::byte> encode_routing_header(const routing_header& h) {
    std::vector<std::byte> out;
    const auto name = h.model_name.substr(0, routing_max_name);
    const auto* m = reinterpret_cast<const std::byte*>(routing_magic);
    out.insert(out.end(), m, m + sizeof(routing_magic));
    put(out, h.version);
    put(out, static_cast<std::uint32_t>(routing_header_bytes(name.size())));
    put(out, h.geometry.layers);
    put(out, h.geometry.experts);
    put(out, h.geometry.top_k);
    put(out, static_cast<std::uint32_t>(name.size()));
    put(out, h.tokens);
    const auto* n = reinterpret_cast<const std::byte*>(name.data());
    out.insert(out.end(), n, n + name.size());
    return out;
}

void encode_routing_record(const routing_geometry& g, std::uint32_t sequence, std::uint32_t position,
                           std::span<const std::uint16_t> ids, std::span<const float> weights,
                           std::span<const std::uint16_t> predicted, std::span<const std::uint16_t> predicted2,
                           std::vector<std::byte>& out) {
    const std::size_t k = g.top_k;
    put(out, sequence);
    put(out, position);
    for (std::uint32_t l = 0; l < g.layers; ++l) {
        for (std::size_t j = 0; j < k; ++j) {
            put(out, ids[l * k + j]);
        }
        for (std::size_t j = 0; j < k; ++j) {
            put(out, weights[l * k + j]);
        }
        for (std::size_t j = 0; j < k; ++j) {
            put(out, predicted[l * k + j]);
        }
        for (std::size_t j = 0; j < k; ++j) {
            put(out, predicted2[l * k + j]);
        }
    }
}

result<routing_trace> routing_trace::load(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return make_errno_error(errno, path.string() + ": cannot open the routing recording");
    }
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        return make_errno_error(errno, path.string() + ": reading the routing recording");
    }
    return parse(std::as_bytes(std::span<const char>(raw)), path.string());
}

result<routing_trace> routing_trace::parse(std::span<const std::byte> b, const std::string& what) {
    std::size_t at = 0;
    auto header = parse_header(b, at);
    if (!header) {
        return header.error().with_context(what);
    }
    routing_trace t;
    t.header_ = std::move(*header);
    const auto& g = t.header_.geometry;
    const auto record = routing_record_bytes(g, t.header_.version);
    const bool depth2 = t.header_.version >= 2;
    const auto body = b.size() - at;
    if (t.header_.tokens > body / record) {
        return make_error(std::errc::invalid_argument,
                          what + ": truncated: " + std::to_string(t.header_.tokens) + " token records of " +
                              std::to_string(record) + " bytes do not fit in the " + std::to_string(body) +
                              " bytes after the header");
    }
    if (body != t.header_.tokens * record) {
        return make_error(std::errc::invalid_argument,
                          what + ": wrong size: " + std::to_string(t.header_.tokens) + " token records of " +
                              std::to_string(record) + " bytes need " + std::to_string(t.header_.tokens * record) +
                              " bytes after the header, the file has " + std::to_string(body));
    }
    const std::size_t n = t.header_.tokens, per = std::size_t{g.layers} * g.top_k;
    t.sequence_.resize(n);
    t.position_.resize(n);
    t.ids_.resize(n * per);
    t.predicted_.resize(n * per);
    t.predicted2_.assign(n * per, no_expert);
    t.weights_.resize(n * per);
    for (std::size_t i = 0; i < n; ++i, at += record) {
        t.sequence_[i] = get<std::uint32_t>(b, at);
        t.position_[i] = get<std::uint32_t>(b, at + 4);
        std::size_t p = at + 8;
        for (std::uint32_t l = 0; l < g.layers; ++l) {
            const std::size_t dst = i * per + std::size_t{l} * g.top_k;
            for (std::uint32_t j = 0; j < g.top_k; ++j, p += 2) {
                t.ids_[dst + j] = get<std::uint16_t>(b, p);
            }
            for (std::uint32_t j = 0; j < g.top_k; ++j, p += 4) {
                t.weights_[dst + j] = get<float>(b, p);
            }
            for (std::uint32_t j = 0; j < g.top_k; ++j, p += 2) {
                t.predicted_[dst + j] = get<std::uint16_t>(b, p);
            }
            for (std::uint32_t j = 0; depth2 && j < g.top_k; ++j, p += 2) {
                t.predicted2_[dst + j] = get<std::uint16_t>(b, p);
            }
            for (std::uint32_t j = 0; j < g.top_k; ++j) {
                const auto e = t.ids_[dst + j], q = t.predicted_[dst + j], q2 = t.predicted2_[dst + j];
                if ((e != no_expert && e >= g.experts) || (q != no_expert && q >= g.experts) ||
                    (q2 != no_expert && q2 >= g.experts) || !std::isfinite(t.weights_[dst + j])) {
                    return make_error(std::errc::invalid_argument, what + ": token " + std::to_string(i) + " layer " +
                                                                       std::to_string(l) + ": expert id past " +
                                                                       std::to_string(g.experts - 1) +
                                                                       " or a weight that is not finite");
                }
            }
        }
    }
    return t;
}

std::size_t routing_trace::at(std::uint64_t t, std::uint32_t layer) const noexcept {
    const auto& g = header_.geometry;
    return (static_cast<std::size_t>(t) * g.layers + layer) * g.top_k;
}

std::span<const std::uint16_t> routing_trace::experts(std::uint64_t t, std::uint32_t layer) const noexcept {
    return {ids_.data() + at(t, layer), header_.geometry.top_k};
}

std::span<const float> routing_trace::weights(std::uint64_t t, std::uint32_t layer) const noexcept {
    return {weights_.data() + at(t, layer), header_.geometry.top_k};
}

std::span<const std::uint16_t> routing_trace::predicted(std::uint64_t t, std::uint32_t layer) const noexcept {
    return {predicted_.data() + at(t, layer), header_.geometry.top_k};
}

std::span<const std::uint16_t> routing_trace::predicted2(std::uint64_t t, std::uint32_t layer) const noexcept {
    return {predicted2_.data() + at(t, layer), header_.geometry.top_k};
}

result<routing_file_writer> routing_file_writer::create(const std::filesystem::path& path, routing_header header) {
    header.tokens = 0;
    header.version = routing_version;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return make_errno_error(errno, path.string() + ": cannot create the routing recording");
    }
    routing_file_writer w(fd, path, std::move(header));
    const auto bytes = encode_routing_header(w.header_);
    if (auto r = write_all(fd, bytes.data(), bytes.size(), -1, path); !r) {
        return r.error();
    }
    return w;
}

routing_file_writer::routing_file_writer(routing_file_writer&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), header_(std::move(other.header_)) {}

routing_file_writer::~routing_file_writer() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

result<void> routing_file_writer::append(std::span<const std::byte> records, std::uint64_t tokens) {
    if (auto r = write_all(fd_, records.data(), records.size(), -1, path_); !r) {
        return r;
    }
    header_.tokens += tokens;
    const auto count = header_.tokens;
    return write_all(fd_, reinterpret_cast<const std::byte*>(&count), sizeof(count), off_tokens, path_);
}

} // namespace sluice::experts
