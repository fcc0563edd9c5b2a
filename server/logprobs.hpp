// OpenAI `logprobs` objects from the engine's per-token log-probabilities: chat's {content: [{token, logprob,
// bytes, top_logprobs}]} and legacy completions' {tokens, token_logprobs, top_logprobs, text_offset}.
#pragma once

#include "runtime/engine/session.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstddef>

namespace sluice::server {

/// The log-probability as OpenAI reports it: finite, -9999 standing for "no mass" (-inf).
double reported_logprob(float logprob) noexcept;

/// One chat entry: {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]} for a generated token
/// (`ev.token` >= 0). `token` is the token's text (invalid UTF-8 shown as U+FFFD); `bytes` its exact bytes.
boost::json::object chat_logprob_entry(const tokenizer::tokenizer& vocab, const token_event& ev);

/// Accumulates a legacy completion's logprobs object.
class completion_logprobs {
public:
    explicit completion_logprobs(const tokenizer::tokenizer& vocab) : vocab_(&vocab) {}

    /// Adds a generated token (`ev.token` >= 0).
    void add(const token_event& ev);
    /// {tokens, token_logprobs, top_logprobs, text_offset} of the tokens added since the last take() (the
    /// offsets count bytes from the start of the choice's text), and starts a new batch.
    boost::json::object take();

private:
    const tokenizer::tokenizer* vocab_;
    boost::json::array tokens_;
    boost::json::array token_logprobs_;
    boost::json::array top_logprobs_;
    boost::json::array text_offset_;
    std::size_t offset_ = 0;
};

} // namespace sluice::server
