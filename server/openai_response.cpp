// OpenAI response and chunk bodies.
#include "server/openai_response.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <cstdio>
#include <random>

namespace sluice::server {
namespace {

namespace json = boost::json;

double per_second(std::uint64_t n, double ms) {
    return ms > 0.0 ? static_cast<double>(n) * 1000.0 / ms : 0.0;
}

std::string_view object_name(completion_kind kind, bool chunk) {
    if (kind == completion_kind::chat) {
        return chunk ? "chat.completion.chunk" : "chat.completion";
    }
    return "text_completion";
}

json::object envelope(const response_meta& meta, bool chunk) {
    return json::object{
        {"id", meta.id}, {"object", object_name(meta.kind, chunk)}, {"created", meta.created}, {"model", meta.model}};
}

json::object choice(const response_meta& meta, std::string_view text, bool first, json::value finish) {
    json::object c{{"index", 0}};
    if (meta.kind == completion_kind::chat) {
        json::object delta;
        if (first) {
            delta["role"] = "assistant";
        }
        if (!text.empty() || first) {
            delta["content"] = text;
        }
        c["delta"] = std::move(delta);
    } else {
        c["text"] = text;
    }
    c["logprobs"] = nullptr;
    c["finish_reason"] = std::move(finish);
    return c;
}

} // namespace

std::string make_response_id(completion_kind kind) {
    static std::mt19937_64 rng{std::random_device{}()};
    char hex[25];
    std::snprintf(hex, sizeof hex, "%016llx%08llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng() & 0xffffffffULL));
    return std::string(kind == completion_kind::chat ? "chatcmpl-" : "cmpl-") + hex;
}

std::string_view finish_reason_name(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::stop:
        return "stop";
    case finish_reason::length:
    case finish_reason::context_full:
        return "length";
    case finish_reason::cancelled:
        return "cancelled";
    }
    return "stop";
}

json::object usage_json(const generation_summary& s) {
    return json::object{{"prompt_tokens", s.prompt_tokens},
                        {"completion_tokens", s.completion_tokens},
                        {"total_tokens", s.prompt_tokens + s.completion_tokens},
                        {"prompt_tokens_details", json::object{{"cached_tokens", s.cached_tokens}}}};
}

json::object timings_json(const generation_summary& s) {
    const std::uint32_t prompt_n = s.prompt_tokens - s.cached_tokens;
    return json::object{{"prompt_n", prompt_n},
                        {"prompt_ms", s.prompt_ms},
                        {"prompt_per_second", per_second(prompt_n, s.prompt_ms)},
                        {"predicted_n", s.completion_tokens},
                        {"predicted_ms", s.decode_ms},
                        {"predicted_per_second", per_second(s.completion_tokens, s.decode_ms)}};
}

json::object full_response(const response_meta& meta, const std::string& text, const generation_summary& s) {
    auto r = envelope(meta, false);
    json::object c{{"index", 0}};
    if (meta.kind == completion_kind::chat) {
        c["message"] = json::object{{"role", "assistant"}, {"content", text}};
    } else {
        c["text"] = text;
    }
    c["logprobs"] = nullptr;
    c["finish_reason"] = finish_reason_name(s.reason);
    r["choices"] = json::array{std::move(c)};
    r["usage"] = usage_json(s);
    r["timings"] = timings_json(s);
    return r;
}

json::object text_chunk(const response_meta& meta, std::string_view text, bool first) {
    auto r = envelope(meta, true);
    r["choices"] = json::array{choice(meta, text, first, nullptr)};
    if (meta.include_usage) {
        r["usage"] = nullptr; // as OpenAI: every chunk but the last has "usage": null
    }
    return r;
}

json::object final_chunk(const response_meta& meta, const generation_summary& s) {
    auto r = envelope(meta, true);
    r["choices"] = json::array{choice(meta, "", false, json::value(finish_reason_name(s.reason)))};
    if (meta.include_usage) {
        r["usage"] = nullptr;
    }
    r["timings"] = timings_json(s);
    return r;
}

json::object usage_chunk(const response_meta& meta, const generation_summary& s) {
    auto r = envelope(meta, true);
    r["choices"] = json::array{};
    r["usage"] = usage_json(s);
    r["timings"] = timings_json(s);
    return r;
}

} // namespace sluice::server
