// A routing recording: per token and layer, the experts the router chose, their weights and the experts predicted
// for the next layer and (version 2) the layer after it, in a small versioned binary file (docs/ROUTING.md).
// `routing_trace` is a whole recording in memory, read and checked from a file; `routing_file_writer` appends token
// records to a file and keeps its header's token count current. Files are untrusted input: every malformed one is
// refused with a message naming the field.
#pragma once

#include "sluice/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sluice::experts {

/// The file's first eight bytes.
inline constexpr char routing_magic[8] = {'S', 'L', 'R', 'O', 'U', 'T', 'E', '\0'};
/// The format version this build writes; it reads this one and version 1 (no prediction two layers ahead).
inline constexpr std::uint32_t routing_version = 2;
/// An expert slot with no choice (a layer without routed experts, or no prediction for the layer after it).
inline constexpr std::uint16_t no_expert = 0xFFFF;
/// Largest values a reader accepts (a file is untrusted input).
inline constexpr std::uint32_t routing_max_layers = 4096;
inline constexpr std::uint32_t routing_max_top_k = 256;
inline constexpr std::uint32_t routing_max_name = 4096;

/// The shape a recording fits: layers, experts per layer and experts chosen per token.
struct routing_geometry {
    std::uint32_t layers = 0;
    std::uint32_t experts = 0;
    std::uint32_t top_k = 0;
    friend bool operator==(const routing_geometry&, const routing_geometry&) = default;
};

/// "48 layers x 128 experts, top-8".
std::string to_string(const routing_geometry& g);

/// What a recording's header says.
struct routing_header {
    routing_geometry geometry;
    std::uint64_t tokens = 0;                ///< token records that follow the header
    std::string model_name;                  ///< the source model (general.name, else its file name)
    std::uint32_t version = routing_version; ///< 1 or 2 (what a file says; the writer always writes 2)
};

/// Bytes of one token record: sequence and position (u32 each), then per layer k chosen experts (u16), k weights
/// (f32), k predicted experts of the next layer (u16) and, from version 2, k of the layer after it (u16).
std::size_t routing_record_bytes(const routing_geometry& g, std::uint32_t version = routing_version) noexcept;

/// Bytes of the header with a model name of `name_bytes`.
std::size_t routing_header_bytes(std::size_t name_bytes) noexcept;

/// The header in its file form (its `version` as given: token records must match it).
std::vector<std::byte> encode_routing_header(const routing_header& h);

/// Appends one token's version-2 record to `out`. `ids`, `weights`, `predicted` (the next layer's) and
/// `predicted2` (the layer after's) hold layers x top_k entries each.
void encode_routing_record(const routing_geometry& g, std::uint32_t sequence, std::uint32_t position,
                           std::span<const std::uint16_t> ids, std::span<const float> weights,
                           std::span<const std::uint16_t> predicted, std::span<const std::uint16_t> predicted2,
                           std::vector<std::byte>& out);

/// A whole recording in memory.
class routing_trace {
public:
    /// Reads and checks `path`: magic, version, geometry within the limits, the size the token count implies,
    /// every expert id below the expert count (or no_expert), every weight finite. Errors name the file and field
    /// ("run.routing: truncated: 12 token records need 40216 bytes, the file has 31000").
    static result<routing_trace> load(const std::filesystem::path& path);
    /// Parses a recording's bytes (`what` names it in errors).
    static result<routing_trace> parse(std::span<const std::byte> bytes, const std::string& what);

    [[nodiscard]] const routing_header& header() const noexcept { return header_; }
    [[nodiscard]] const routing_geometry& geometry() const noexcept { return header_.geometry; }
    [[nodiscard]] std::uint64_t size() const noexcept { return header_.tokens; }
    /// The sequence (one per forward pass that recorded) and cache position of token `t`.
    [[nodiscard]] std::uint32_t sequence(std::uint64_t t) const noexcept { return sequence_[t]; }
    [[nodiscard]] std::uint32_t position(std::uint64_t t) const noexcept { return position_[t]; }
    /// Token `t`'s top_k chosen experts of `layer` (no_expert: the layer routed nothing).
    [[nodiscard]] std::span<const std::uint16_t> experts(std::uint64_t t, std::uint32_t layer) const noexcept;
    /// Their weights.
    [[nodiscard]] std::span<const float> weights(std::uint64_t t, std::uint32_t layer) const noexcept;
    /// The experts of layer + 1 predicted at `layer` (no_expert: no prediction).
    [[nodiscard]] std::span<const std::uint16_t> predicted(std::uint64_t t, std::uint32_t layer) const noexcept;
    /// The experts of layer + 2 predicted at `layer` (no_expert: no prediction; always so in a version-1 file).
    [[nodiscard]] std::span<const std::uint16_t> predicted2(std::uint64_t t, std::uint32_t layer) const noexcept;
    /// Whether the file holds predictions two layers ahead (version 2).
    [[nodiscard]] bool has_depth2() const noexcept { return header_.version >= 2; }

private:
    [[nodiscard]] std::size_t at(std::uint64_t t, std::uint32_t layer) const noexcept;
    routing_header header_;
    std::vector<std::uint32_t> sequence_, position_;
    std::vector<std::uint16_t> ids_, predicted_, predicted2_;
    std::vector<float> weights_;
};

/// Writes a recording: the header at creation, token records as they are appended, the header's token count
/// rewritten after every append so the file is always whole. Not thread-safe (routing_log serialises).
class routing_file_writer {
public:
    /// Creates (or truncates) `path` and writes `header` with a token count of 0.
    static result<routing_file_writer> create(const std::filesystem::path& path, routing_header header);
    routing_file_writer(routing_file_writer&& other) noexcept;
    routing_file_writer& operator=(routing_file_writer&&) = delete;
    ~routing_file_writer();

    /// Appends `tokens` encoded records and updates the count. Errors name the file.
    result<void> append(std::span<const std::byte> records, std::uint64_t tokens);
    [[nodiscard]] std::uint64_t tokens() const noexcept { return header_.tokens; }

private:
    routing_file_writer(int fd, std::filesystem::path path, routing_header header) noexcept
        : fd_(fd), path_(std::move(path)), header_(std::move(header)) {}
    int fd_ = -1;
    std::filesystem::path path_;
    routing_header header_;
};

} // namespace sluice::experts
