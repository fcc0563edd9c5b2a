// Per-choice output: the reading of the chat template's syntax, control-token text put back, parsing, call ids
// and logprobs.
#include "server/choice_output.hpp"

#include <algorithm>
#include <random>

namespace sluice::server {
namespace {

namespace json = boost::json;

std::string make_call_id() {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) {
        id += alphabet[rng() % (sizeof alphabet - 1)];
    }
    return id;
}

/// Whether the rendered prompt ends inside an open <think> (after trailing whitespace).
bool prompt_opens_think(const tokenizer::tokenizer& vocab, std::span<const std::int32_t> prompt) {
    const std::size_t n = std::min<std::size_t>(prompt.size(), 8);
    std::string tail = vocab.decode(prompt.last(n));
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ' || tail.back() == '\r')) {
        tail.pop_back();
    }
    return tail.ends_with("<think>");
}

/// Concatenation of JSON object fields of the completion logprobs shape (arrays appended).
void append_completion_logprobs(json::object& all, json::object batch) {
    for (auto& kv : batch) {
        auto& target = all[kv.key()];
        if (!target.is_array()) {
            target = json::array{};
        }
        for (auto& v : kv.value().get_array()) {
            target.get_array().push_back(std::move(v));
        }
    }
}

} // namespace

output_reading output_reading_for(const model& m, const completion_request& request,
                                  std::span<const std::int32_t> prompt) {
    output_reading r;
    const auto& tmpl = m.chat_template();
    if (request.kind != completion_kind::chat || !tmpl) {
        return r;
    }
    const auto format = chat::detect_tool_format(tmpl->text);
    // Harmony is read even without tools: its analysis channel is the reasoning.
    if (request.parse_tool_calls || format == chat::tool_format::harmony) {
        r.syntax.tools = format;
    }
    r.syntax.think_tags = chat::template_thinks(tmpl->text);
    r.syntax.starts_in_reasoning = r.syntax.think_tags && prompt_opens_think(m.vocab(), prompt);
    for (const auto marker : chat::control_markers(r.syntax.tools)) {
        r.markers.emplace_back(marker);
    }
    if (r.syntax.think_tags) {
        r.markers.emplace_back("<think>");
        r.markers.emplace_back("</think>");
    }
    r.forced.format = format;
    r.forced.starts_in_reasoning = r.syntax.starts_in_reasoning;
    r.forced.fenced_json = tmpl->text.find("```json") != std::string::npos;
    r.forced.args_marker = tmpl->text.find("[ARGS]") != std::string::npos;
    // The markers the output puts back (above) are the ones a grammar may ask for as control tokens.
    std::vector<std::string_view> markers(chat::control_markers(format).begin(), chat::control_markers(format).end());
    if (r.syntax.think_tags) {
        markers.insert(markers.end(), {"<think>", "</think>"});
    }
    for (const auto text : markers) {
        if (const auto id = m.vocab().find(text); id && m.vocab().is_control(*id)) {
            r.forced.tokens.push_back({std::string(text), *id, m.vocab().is_end_of_generation(*id)});
        }
    }
    return r;
}

choice_output::choice_output(const completion_request& request, const output_reading& reading,
                             const tokenizer::tokenizer& vocab)
    : kind_(request.kind), logprobs_(request.logprobs), calls_allowed_(request.parse_tool_calls),
      parallel_(request.parallel_tool_calls), vocab_(&vocab), markers_(reading.markers),
      parser_(reading.syntax, request.tools), completion_batch_(vocab) {}

void choice_output::absorb(chat::output_delta d, choice_delta& out) {
    reasoning_ += d.reasoning;
    out.reasoning += d.reasoning;
    out.first_call = calls_.size();
    for (auto& c : d.calls) {
        if (!calls_allowed_) {
            out.content += c.arguments; // a harmony call while tool_choice is "none": its text, as content
            continue;
        }
        if (!parallel_ && !calls_.empty()) {
            continue; // parallel_tool_calls false: the first call only
        }
        calls_.push_back(tool_call_out{make_call_id(), std::move(c.name), std::move(c.arguments)});
        out.calls.push_back(calls_.back());
    }
    out.content += d.content;
    content_ += out.content;
}

choice_delta choice_output::on_event(const token_event& ev) {
    choice_delta out;
    std::string text = ev.text;
    if (ev.token >= 0 && !markers_.empty() && vocab_->is_control(ev.token)) {
        // The engine's text skips control tokens; a format marker among them is put back for the parser.
        const std::string_view piece = vocab_->piece(ev.token);
        if (std::find(markers_.begin(), markers_.end(), piece) != markers_.end()) {
            text += piece;
        }
    }
    absorb(parser_.push(text), out);
    if (logprobs_ && ev.token >= 0) {
        if (kind_ == completion_kind::chat) {
            auto entry = chat_logprob_entry(*vocab_, ev);
            chat_logprobs_.push_back(entry);
            out.logprobs = json::object{{"content", json::array{std::move(entry)}}, {"refusal", nullptr}};
        } else {
            completion_batch_.add(ev);
            auto batch = completion_batch_.take();
            append_completion_logprobs(completion_all_, batch);
            out.logprobs = std::move(batch);
        }
    }
    return out;
}

choice_delta choice_output::finish() {
    choice_delta out;
    absorb(parser_.finish(), out);
    return out;
}

json::value choice_output::logprobs() const {
    if (!logprobs_) {
        return nullptr;
    }
    if (kind_ == completion_kind::chat) {
        return json::object{{"content", chat_logprobs_}, {"refusal", nullptr}};
    }
    if (completion_all_.empty()) {
        return json::object{{"tokens", json::array{}},
                            {"token_logprobs", json::array{}},
                            {"top_logprobs", json::array{}},
                            {"text_offset", json::array{}}};
    }
    return completion_all_;
}

} // namespace sluice::server
