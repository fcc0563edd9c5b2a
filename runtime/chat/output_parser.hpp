// Splits a model's generated text into reasoning, content and tool calls, as the chat template's format writes
// them, incrementally (each push returns what became certain) so streamed and whole answers agree.
#pragma once

#include <boost/json/array.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::chat {

/// How a model writes tool calls; detected from its chat template's text (detect_tool_format).
enum class tool_format {
    none,        ///< no tool-call syntax: all text is content
    hermes,      ///< Qwen3 / Hermes 2 Pro: <tool_call>{"name": .., "arguments": {..}}</tool_call>
    qwen3_coder, ///< Qwen3.5 / Qwen3-Coder: <tool_call><function=name><parameter=k>v</parameter></function></tool_call>
    glm45,       ///< GLM-4.5 / 4.7: <tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>
    deepseek_v3, ///< DeepSeek V3 / R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name ```json ..```
    kimi_k2,     ///< Kimi-K2: <|tool_calls_section_begin|><|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{..}
    llama3,      ///< Llama 3.x: the whole answer is {"name": .., "parameters": {..}} (or after <|python_tag|>)
    mistral,     ///< Mistral: [TOOL_CALLS][{"name": .., "arguments": {..}}] or [TOOL_CALLS]name[ARGS]{..}
    harmony,     ///< gpt-oss: channels; analysis is reasoning, commentary to=functions.name is a call
};

/// The format whose syntax `template_text` writes assistant tool calls in. Templates without a known syntax
/// give `hermes` (the most common one), so a model that writes <tool_call> JSON is still understood.
tool_format detect_tool_format(std::string_view template_text);

/// Whether the template knows <think> blocks (mentions "<think>" or "</think>").
bool template_thinks(std::string_view template_text);

/// "hermes", "qwen3_coder", ... ("none" for none).
std::string_view to_string(tool_format f) noexcept;

/// Texts of control tokens the format's parser must see. A streaming detokenizer that drops control tokens
/// should re-insert exactly these (e.g. "<|channel|>" for harmony, "[TOOL_CALLS]" for Mistral).
std::span<const std::string_view> control_markers(tool_format f) noexcept;

/// How the generated text is written.
struct output_syntax {
    tool_format tools = tool_format::none; ///< none: tool calls are never parsed (text stays content)
    bool think_tags = false;               ///< <think>..</think> is reasoning
    bool starts_in_reasoning = false;      ///< the prompt ended inside an open <think>
};

/// A tool call the model made.
struct parsed_tool_call {
    std::string name;
    std::string arguments; ///< a JSON object as text
};

/// What one push (or finish) made certain. Concatenating every delta's fields gives the whole answer.
struct output_delta {
    std::string reasoning;
    std::string content;
    std::vector<parsed_tool_call> calls;
    [[nodiscard]] bool empty() const noexcept { return reasoning.empty() && content.empty() && calls.empty(); }
};

/// Incremental parser of one generation. Text that may still turn out to be a marker or an unfinished call is
/// held back until it is decided. A call that cannot be parsed (bad JSON, no closing marker at the end) is
/// returned as content, never an error. Not thread-safe; one per generated choice.
class output_parser {
public:
    /// `tools` (the request's tool list, may be empty) gives parameter types, so XML-style values of string
    /// parameters stay strings while others are read as JSON.
    output_parser(output_syntax syntax, boost::json::array tools = {});

    /// Adds generated text; returns what is now certain.
    output_delta push(std::string_view text);
    /// Ends the generation: everything still held back is decided.
    output_delta finish();

private:
    enum class mode { content, reasoning, harmony_header, harmony_body };
    void run(bool at_end, output_delta& out);
    bool step_reasoning(bool at_end, output_delta& out);
    bool step_content(bool at_end, output_delta& out);
    bool step_harmony_header(bool at_end, output_delta& out);
    bool step_harmony_body(bool at_end, output_delta& out);
    void emit_content(std::string_view text, output_delta& out);

    output_syntax syntax_;
    boost::json::array tools_;
    mode mode_ = mode::content;
    std::string pending_;        ///< text not decided yet
    bool content_started_ = false; ///< some non-whitespace content was emitted (Llama's JSON must come first)
    bool trim_next_ = false;       ///< drop leading whitespace of the next reasoning or content
    std::string held_space_;       ///< reasoning's trailing whitespace, dropped if </think> follows
    std::string channel_;          ///< harmony: the current message's channel
    std::string recipient_;        ///< harmony: the current message's recipient ("functions.name")
};

/// Parses a whole generation at once (push then finish).
output_delta parse_output(std::string_view text, output_syntax syntax, boost::json::array tools = {});

} // namespace sluice::chat
