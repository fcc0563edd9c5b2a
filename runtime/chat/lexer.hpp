// Jinja lexer: splits template source into text and tag tokens, applying whitespace control.
#pragma once

#include "sluice/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace sluice::chat {

/// Whitespace options, as jinja2's Environment takes them (Hugging Face sets both).
struct lexer_options {
    bool trim_blocks = true;   ///< drop the first newline after a block tag
    bool lstrip_blocks = true; ///< drop spaces and tabs before a block tag at the start of a line
};

enum class token_kind { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct token {
    token_kind kind;
    std::string text; ///< raw text, identifier, unescaped string literal, number digits or operator
    int line;         ///< 1-based line of the token's start
};

/// Tokenizes `source`. Errors: unterminated tags, strings or comments, unknown characters (with line numbers).
result<std::vector<token>> tokenize(std::string_view source, const lexer_options& options);

} // namespace sluice::chat
