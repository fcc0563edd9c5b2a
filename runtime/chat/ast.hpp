// Syntax tree of a parsed Jinja template: expression nodes and statement nodes.
#pragma once

#include "runtime/chat/value.hpp"

#include <memory>
#include <string>
#include <vector>

namespace sluice::chat {

struct expr;
using expr_ptr = std::unique_ptr<expr>;

enum class expr_kind {
    literal,     // value
    name,        // name
    attribute,   // operands[0].name
    subscript,   // operands[0][operands[1]]
    slice,       // operands[0][operands[1]:operands[2]:operands[3]] (null operands are omitted bounds)
    call,        // operands[0](args)
    filter,      // operands[0] | name(args); operands may be empty inside a filter block
    test,        // operands[0] is [not] name(args)
    unary,       // name in {"not", "-", "+"} applied to operands[0]
    binary,      // operands[0] name operands[1]; name is the operator ("and", "or", "+", "~", "in", ...)
    compare,     // operands[0] ops[0] operands[1] ops[1] ... (chained comparison)
    conditional, // operands[0] if operands[1] else operands[2] (operands[2] may be null)
    list,        // [operands...]
    tuple,       // (operands...)
    dict,        // {operands[0]: operands[1], ...}
};

/// One expression node; which fields are used depends on `kind` (see expr_kind).
struct expr {
    expr_kind kind;
    int line = 0;
    unsigned height = 1; // nodes on the longest path down from here (bounded by the parser)
    std::string name;
    value literal;
    bool negated = false;
    std::vector<expr_ptr> operands;
    std::vector<std::string> ops;
    std::vector<expr_ptr> args;
    std::vector<std::pair<std::string, expr_ptr>> kwargs;
};

struct stmt;
using stmt_ptr = std::unique_ptr<stmt>;
using stmt_list = std::vector<stmt_ptr>;

enum class stmt_kind {
    text,       // name holds the text
    output,     // {{ value }}
    if_,        // branches: (condition, body) pairs; a null condition is the else branch
    for_,       // for targets in value [if condition] body [else else_body]
    set,        // set targets = value, or block set (body) with optional filter
    macro,      // macro name(params) body
    call_block, // call value(args) body: `caller` is the body
    filter,     // filter value(filters) body
    break_,
    continue_,
    generation, // body rendered as is
};

struct macro_param {
    std::string name;
    expr_ptr default_value;
};

/// One statement node; which fields are used depends on `kind` (see stmt_kind).
struct stmt {
    stmt_kind kind;
    int line = 0;
    std::string name;
    expr_ptr value;     // output / for iterable / set value / call / filter chain
    expr_ptr condition; // for-loop filter
    expr_ptr target;    // set / for target (name, tuple or attribute)
    std::vector<std::pair<expr_ptr, stmt_list>> branches;
    stmt_list body;
    stmt_list else_body;
    std::vector<macro_param> params;
};

} // namespace sluice::chat
