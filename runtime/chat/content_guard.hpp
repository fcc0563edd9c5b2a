// Keeps control tokens out of what users wrote: the text of a control token ("<|im_end|>") inside a message,
// tool definition or template argument is rendered as it is, but marked, so that the tokenizer encodes it as
// text and only the template's own markup becomes control tokens.
#pragma once

#include "runtime/chat/chat_template.hpp"
#include "runtime/chat/template.hpp"
#include "sluice/error.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sluice::chat {

/// A rendered chat prompt with the byte ranges [first, second) of `text` that spell a control token but came
/// from the conversation; tokenizer::encode_options::literal_spans takes them as they are.
struct guarded_prompt {
    std::string text;
    std::vector<std::pair<std::size_t, std::size_t>> literal_spans; ///< sorted, disjoint
};

/// Renders `tmpl` over `inputs` as render_chat does, after replacing every occurrence of a `control_tokens`
/// text in the strings of messages, tools and kwargs (not bos_token/eos_token) by a private marker (Unicode
/// noncharacters U+FDD0/U+FDD1 around a number); the markers in the output are put back and recorded as
/// literal spans. A template that only copies, trims or splits message contents (every known one) keeps the
/// markers whole; one that cuts through a marker leaves its pieces in the text. Errors: as render.
result<guarded_prompt> render_chat_guarded(const jinja_template& tmpl, const chat_inputs& inputs,
                                           std::span<const std::string> control_tokens);

} // namespace sluice::chat
