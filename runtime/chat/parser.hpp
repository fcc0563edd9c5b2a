// Jinja parser: turns lexer tokens into a statement tree.
#pragma once

#include "runtime/chat/ast.hpp"
#include "runtime/chat/lexer.hpp"
#include "sluice/error.hpp"

#include <vector>

namespace sluice::chat {

/// Parses a token stream into top-level statements. Errors name the line and what was expected
/// ("TemplateSyntaxError: line 3: unexpected end of template, expected 'endif'"). An expression taller than
/// `max_height` nodes is refused ("TemplateLimitError: ...").
result<stmt_list> parse_tokens(const std::vector<token>& tokens, unsigned max_height);

/// Fails ("TemplateAssertionError: line 2: No filter named 'x'.") when a filter or test that does not exist is
/// used outside if statements and conditional expressions, as jinja2's compiler does.
result<void> check_names(const stmt_list& body);

} // namespace sluice::chat
