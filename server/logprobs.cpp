// Logprobs JSON in OpenAI's two shapes.
#include "server/logprobs.hpp"

#include "runtime/tokenizer/unicode.hpp"

#include <cmath>
#include <string>

namespace sluice::server {
namespace {

namespace json = boost::json;

json::array byte_values(std::string_view piece) {
    json::array out;
    out.reserve(piece.size());
    for (const char c : piece) {
        out.emplace_back(static_cast<std::int64_t>(static_cast<unsigned char>(c)));
    }
    return out;
}

json::object token_json(const tokenizer::tokenizer& vocab, std::int32_t token, float logprob) {
    const std::string_view piece = vocab.piece(token);
    return json::object{{"token", tokenizer::valid_utf8(piece)},
                        {"logprob", reported_logprob(logprob)},
                        {"bytes", byte_values(piece)}};
}

} // namespace

double reported_logprob(float logprob) noexcept {
    return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0;
}

json::object chat_logprob_entry(const tokenizer::tokenizer& vocab, const token_event& ev) {
    auto entry = token_json(vocab, ev.token, ev.logprob);
    json::array top;
    top.reserve(ev.top.size());
    for (const auto& t : ev.top) {
        top.emplace_back(token_json(vocab, t.token, t.logprob));
    }
    entry["top_logprobs"] = std::move(top);
    return entry;
}

void completion_logprobs::add(const token_event& ev) {
    const std::string_view piece = vocab_->piece(ev.token);
    tokens_.emplace_back(tokenizer::valid_utf8(piece));
    token_logprobs_.emplace_back(reported_logprob(ev.logprob));
    json::object top;
    for (const auto& t : ev.top) {
        top[tokenizer::valid_utf8(vocab_->piece(t.token))] = reported_logprob(t.logprob);
    }
    top_logprobs_.emplace_back(std::move(top));
    text_offset_.emplace_back(static_cast<std::uint64_t>(offset_));
    offset_ += piece.size();
}

json::object completion_logprobs::take() {
    json::object out{{"tokens", std::move(tokens_)},
                     {"token_logprobs", std::move(token_logprobs_)},
                     {"top_logprobs", std::move(top_logprobs_)},
                     {"text_offset", std::move(text_offset_)}};
    tokens_ = {};
    token_logprobs_ = {};
    top_logprobs_ = {};
    text_offset_ = {};
    return out;
}

} // namespace sluice::server
