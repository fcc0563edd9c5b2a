// The grammar that forces a tool call (tool_choice "required" or a named function) in the syntax the model's chat
// template writes: one builder per tool-call format, the names and arguments taken from the request's tools.
#pragma once

#include "server/api_error.hpp"

#include "runtime/chat/output_parser.hpp"

#include <boost/json/array.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::server {

/// A marker of the format whose text is one control token of the vocabulary: the grammar asks for the token
/// (`<[id]>`), since the mask never lets text spell a control token.
struct marker_token {
    std::string text;
    std::int32_t id = -1;
    bool end_of_generation = false; ///< it ends generation: the grammar ends where it would stand
};

/// How the model writes calls, beyond the format.
struct forced_call_syntax {
    chat::tool_format format = chat::tool_format::none;
    bool starts_in_reasoning = false; ///< the prompt left the model inside <think>: it closes it first
    /// DeepSeek: function<｜tool▁sep｜>name\n```json\n{..}\n``` (false: V3.1's name<｜tool▁sep｜>{..}).
    bool fenced_json = true;
    /// Mistral: [TOOL_CALLS]name[ARGS]{..} (false: [TOOL_CALLS][{"name": .., "arguments": ..}]).
    bool args_marker = false;
    std::vector<marker_token> tokens; ///< the format's markers that are control tokens
};

/// GBNF that accepts exactly the text of one call (or, with `parallel`, one or more) in `syntax.format`, to a tool
/// of `tools` (only `only` when it is set): the name one of theirs, the arguments following its `parameters`
/// schema. JSON formats take the arguments as JSON under the schema; Qwen3-Coder and GLM-4.5 take the schema's
/// properties in its order (required ones present), string values as text without "</" (at most maxLength
/// characters; a string enum as one of its values) and other values as JSON
/// under the property's schema. Llama 3.x and gpt-oss write one call whatever `parallel` says (their parsers and
/// templates know one per turn). Errors (400): a schema the compiler refuses (param tools[i].function.parameters),
/// an XML-format tool whose parameters are not an object schema, a format without call syntax.
api_result<std::string> forced_call_grammar(const boost::json::array& tools, const std::optional<std::string>& only,
                                            bool parallel, const forced_call_syntax& syntax);

} // namespace sluice::server
