// One generated choice turned into what the OpenAI response carries: reasoning, content, tool calls (with ids)
// and logprobs, token by token for streaming and accumulated for the whole answer.
#pragma once

#include "runtime/chat/output_parser.hpp"
#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"
#include "server/logprobs.hpp"
#include "server/openai_request.hpp"
#include "server/tool_call_grammar.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sluice::server {

/// How a request's output is read: the chat template's syntax and the control-token texts to put back into the
/// detokenized text (the engine's text drops control tokens; formats such as harmony are made of them).
struct output_reading {
    chat::output_syntax syntax;
    std::vector<std::string> markers;
    /// What a forced call's grammar needs (apply_tool_choice): the markers that are control tokens, and which of
    /// its format's variants the template writes.
    forced_call_syntax forced;
};

/// The reading of `request`'s output under `m`'s chat template, `prompt` being its rendered tokens (a prompt
/// that ends with "<think>" starts the output inside the reasoning). Completions read all text as content.
output_reading output_reading_for(const model& m, const completion_request& request,
                                  std::span<const std::int32_t> prompt);

/// A tool call as the response carries it.
struct tool_call_out {
    std::string id; ///< "call_" and 24 random letters and digits
    std::string name;
    std::string arguments; ///< JSON object text
};

/// What one token event (or the end) adds to a choice.
struct choice_delta {
    std::string reasoning;
    std::string content; ///< chat content, or a completion's text
    std::vector<tool_call_out> calls;
    std::size_t first_call = 0; ///< index (within the choice) of calls[0]
    boost::json::value logprobs; ///< null, or the logprobs object of this delta's tokens
    [[nodiscard]] bool empty() const noexcept {
        return reasoning.empty() && content.empty() && calls.empty() && logprobs.is_null();
    }
};

/// One choice's output. Not thread-safe; one per choice.
class choice_output {
public:
    choice_output(const completion_request& request, const output_reading& reading, const tokenizer::tokenizer& vocab);

    /// The event's text through the parser, and its token's logprobs when requested.
    choice_delta on_event(const token_event& ev);
    /// Everything still held back.
    choice_delta finish();

    [[nodiscard]] const std::string& reasoning() const noexcept { return reasoning_; }
    [[nodiscard]] const std::string& content() const noexcept { return content_; }
    [[nodiscard]] const std::vector<tool_call_out>& calls() const noexcept { return calls_; }
    /// The whole choice's logprobs object, or null when not requested.
    [[nodiscard]] boost::json::value logprobs() const;

private:
    void absorb(chat::output_delta d, choice_delta& out);

    completion_kind kind_;
    bool logprobs_;
    bool calls_allowed_;
    bool parallel_;
    const tokenizer::tokenizer* vocab_;
    std::vector<std::string> markers_;
    chat::output_parser parser_;
    std::string reasoning_;
    std::string content_;
    std::vector<tool_call_out> calls_;
    boost::json::array chat_logprobs_;      ///< every entry so far (chat)
    completion_logprobs completion_batch_;   ///< entries since the last delta (completions)
    boost::json::object completion_all_;     ///< every entry so far (completions)
};

} // namespace sluice::server
