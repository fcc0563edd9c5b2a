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

json::object chunk(const response_meta& meta, json::object choice) {
    auto r = envelope(meta, true);
    r["choices"] = json::array{std::move(choice)};
    if (meta.include_usage) {
        r["usage"] = nullptr; // as OpenAI: every chunk but the last has "usage": null
    }
    return r;
}

json::object tool_call_json(const tool_call_out& c) {
    return json::object{{"id", c.id},
                        {"type", "function"},
                        {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}};
}

/// The assistant message of a finished chat choice. Content is null when the choice only made calls.
json::object message_json(const choice_output& out) {
    json::object m{{"role", "assistant"}};
    const bool blank = out.content().find_first_not_of(" \t\r\n") == std::string::npos;
    if (!out.calls().empty() && blank) {
        m["content"] = nullptr;
    } else {
        m["content"] = out.content();
    }
    if (!out.reasoning().empty()) {
        m["reasoning_content"] = out.reasoning();
    }
    if (!out.calls().empty()) {
        json::array calls;
        for (const auto& c : out.calls()) {
            calls.push_back(tool_call_json(c));
        }
        m["tool_calls"] = std::move(calls);
    }
    return m;
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
    json::object t{{"prompt_n", prompt_n},
                   {"prompt_ms", s.prompt_ms},
                   {"prompt_per_second", per_second(prompt_n, s.prompt_ms)},
                   {"predicted_n", s.completion_tokens},
                   {"predicted_ms", s.decode_ms},
                   {"predicted_per_second", per_second(s.completion_tokens, s.decode_ms)}};
    if (s.verify_steps > 0) { // speculative decoding (llama.cpp's names for the first two)
        t["draft_n"] = s.drafted_tokens;
        t["draft_n_accepted"] = s.accepted_tokens;
        t["draft_verify_steps"] = s.verify_steps;
        t["draft_ms"] = s.draft_ms;
    }
    return t;
}

std::string_view choice_finish_reason(const generation_summary& s, const choice_output& out) noexcept {
    if (!out.calls().empty() && s.reason == finish_reason::stop) {
        return "tool_calls";
    }
    return finish_reason_name(s.reason);
}

void add_choice_summary(generation_summary& total, const generation_summary& more) {
    total.completion_tokens += more.completion_tokens;
    total.decode_ms += more.decode_ms;
    total.prompt_ms += more.prompt_ms;
    total.drafted_tokens += more.drafted_tokens;
    total.accepted_tokens += more.accepted_tokens;
    total.verify_steps += more.verify_steps;
    total.draft_ms += more.draft_ms;
}

json::object full_response(const response_meta& meta, std::span<const finished_choice> choices,
                           const generation_summary& total) {
    auto r = envelope(meta, false);
    json::array list;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        const auto& out = *choices[i].output;
        json::object c{{"index", i}};
        if (meta.kind == completion_kind::chat) {
            c["message"] = message_json(out);
        } else {
            c["text"] = out.content();
        }
        c["logprobs"] = out.logprobs();
        c["finish_reason"] = choices[i].finish_reason;
        list.push_back(std::move(c));
    }
    r["choices"] = std::move(list);
    r["usage"] = usage_json(total);
    r["timings"] = timings_json(total);
    return r;
}

json::object role_chunk(const response_meta& meta, std::size_t index) {
    return chunk(meta, json::object{{"index", index},
                                    {"delta", json::object{{"role", "assistant"}, {"content", ""}}},
                                    {"logprobs", nullptr},
                                    {"finish_reason", nullptr}});
}

std::vector<json::object> delta_chunks(const response_meta& meta, std::size_t index, const choice_delta& d) {
    std::vector<json::object> out;
    if (meta.kind != completion_kind::chat) {
        if (!d.content.empty() || !d.logprobs.is_null()) {
            out.push_back(chunk(meta, json::object{{"index", index},
                                                   {"text", d.content},
                                                   {"logprobs", d.logprobs},
                                                   {"finish_reason", nullptr}}));
        }
        return out;
    }
    if (!d.reasoning.empty() || !d.content.empty() || !d.logprobs.is_null()) {
        json::object delta;
        if (!d.reasoning.empty()) {
            delta["reasoning_content"] = d.reasoning;
        }
        if (!d.content.empty()) {
            delta["content"] = d.content;
        }
        out.push_back(chunk(meta, json::object{{"index", index},
                                               {"delta", std::move(delta)},
                                               {"logprobs", d.logprobs},
                                               {"finish_reason", nullptr}}));
    }
    for (std::size_t i = 0; i < d.calls.size(); ++i) {
        const auto& c = d.calls[i];
        const std::size_t call_index = d.first_call + i;
        json::object head{{"index", call_index},
                          {"id", c.id},
                          {"type", "function"},
                          {"function", json::object{{"name", c.name}, {"arguments", ""}}}};
        json::object args{{"index", call_index}, {"function", json::object{{"arguments", c.arguments}}}};
        for (auto* part : {&head, &args}) {
            out.push_back(chunk(meta, json::object{{"index", index},
                                                   {"delta", json::object{{"tool_calls", json::array{*part}}}},
                                                   {"logprobs", nullptr},
                                                   {"finish_reason", nullptr}}));
        }
    }
    return out;
}

json::object final_chunk(const response_meta& meta, std::size_t index, std::string_view finish,
                         const generation_summary& s) {
    json::object c{{"index", index}};
    if (meta.kind == completion_kind::chat) {
        c["delta"] = json::object{};
    } else {
        c["text"] = "";
    }
    c["logprobs"] = nullptr;
    c["finish_reason"] = finish;
    auto r = chunk(meta, std::move(c));
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
