// Settings of `sluice serve` and the parsers of their human-friendly forms ("1MiB", "30s").
#pragma once

#include "runtime/chat/limits.hpp"
#include "sluice/error.hpp"
#include "sluice/model_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::server {

/// Everything the server needs to start. Defaults are the command line's defaults.
struct server_options {
    std::string model;                         ///< GGUF file (any part of a split model)
    std::string host = "127.0.0.1";            ///< address to bind
    std::uint16_t port = 8080;                 ///< 0: let the kernel choose (printed on stderr)
    std::size_t parallel = 4;                  ///< generations running at once, one session each, batched per step
    std::size_t queue = 16;                    ///< requests waiting for a slot before 503
    std::uint32_t ctx = 0;                     ///< context of each session; 0: the model's default
    std::size_t threads = 0;                   ///< compute threads; 0: one per hardware thread
    std::string api_key;                       ///< empty: no authentication
    std::size_t max_body = 1024 * 1024;        ///< largest request body in bytes (413 beyond)
    std::size_t max_header = 16 * 1024;        ///< largest request header block in bytes (431 beyond)
    std::chrono::milliseconds timeout{30'000}; ///< limit of every read and every write
    /// After SIGTERM: how long running generations may go on before they are ended with a final event.
    std::chrono::milliseconds shutdown_grace{5'000};
    std::uint64_t memory_budget = 0;           ///< bytes for the model (model_options::memory_budget); 0: default
    double disk_bandwidth = 0;                 ///< bytes/s for the memory plan's bound; 0: probe when streaming
    bool prefetch = true;                      ///< streaming: read the next layer's experts ahead
    std::uint32_t prefetch_depth = 1;          ///< streaming: model_options::prefetch_depth
    expert_cache_policy cache_policy = expert_cache_policy::lru2; ///< streaming: which expert to evict
    std::uint32_t cache_pin_percent = 50;      ///< streaming, pin_hot: share of the slots pinned
    expert_read_order read_order = expert_read_order::priority; ///< streaming: model_options::read_order
    std::uint32_t read_window = 0;             ///< streaming: model_options::read_window
    chat::template_limits template_limits;     ///< what rendering a chat template may use per request
    bool special_tokens_in_content = false;    ///< old behaviour: control-token text in messages is parsed
    std::string record_routing;                ///< --record-routing: model::set_routing (empty: none)
    std::string draft;                         ///< --draft: model_options::draft_model (empty: none)
    std::uint32_t draft_max = 8;               ///< --draft-max: model_options::draft_max
    bool draft_optional = false;               ///< --draft-optional: model_options::draft_optional
    bool lookup = false;                       ///< --lookup: prompt lookup is the default mode (without --draft)
    bool mtp = false;                          ///< --mtp: model_options::mtp (the default mode without --draft)
    bool draft_prefetch = true;                ///< !--no-draft-prefetch: model_options::draft_prefetch
    bool draft_fixed = false;                  ///< --draft-fixed: model_options::draft_adaptive = false
};

/// Parses a byte size: a non-negative integer with an optional unit B, KB, MB, GB (powers of 1000) or
/// KiB, MiB, GiB (powers of 1024), case-insensitive ("1MiB", "512k" is rejected). Errors name the input.
[[nodiscard]] result<std::size_t> parse_size(std::string_view text);

/// Parses a duration: a non-negative integer with unit ms, s, m or h ("30s", "500ms"); a bare number is
/// seconds. Errors name the input.
[[nodiscard]] result<std::chrono::milliseconds> parse_duration(std::string_view text);

} // namespace sluice::server
