// Compile-time check of filter and test names, as jinja2 does it: an unknown name fails the whole template
// unless it sits inside an if statement or a conditional expression, where it fails only when evaluated.
#include "runtime/chat/evaluator.hpp"
#include "runtime/chat/parser.hpp"

namespace sluice::chat {
namespace {

void check_expr(const expr& e, bool soft);

void check_children(const expr& e, bool soft) {
    for (const auto& op : e.operands) {
        if (op)
            check_expr(*op, soft);
    }
    for (const auto& a : e.args)
        check_expr(*a, soft);
    for (const auto& [k, a] : e.kwargs)
        check_expr(*a, soft);
}

void check_expr(const expr& e, bool soft) {
    if (!soft && e.kind == expr_kind::filter && !has_filter(e.name))
        fail("line " + std::to_string(e.line) + ": No filter named '" + e.name + "'.", "TemplateAssertionError");
    if (!soft && e.kind == expr_kind::test && !has_test(e.name))
        fail("line " + std::to_string(e.line) + ": No test named '" + e.name + "'.", "TemplateAssertionError");
    check_children(e, soft || e.kind == expr_kind::conditional);
}

void check_body(const stmt_list& body, bool soft);

void check_stmt(const stmt& s, bool soft) {
    for (const expr* e : {s.value.get(), s.target.get()}) {
        if (e)
            check_expr(*e, soft);
    }
    if (s.condition)
        check_expr(*s.condition, false); // the loop filter runs in the loop's own frame
    for (const auto& [condition, body] : s.branches) {
        if (condition)
            check_expr(*condition, true);
        check_body(body, true);
    }
    for (const auto& p : s.params) {
        if (p.default_value)
            check_expr(*p.default_value, false);
    }
    // Loop, macro, call, filter and set-block bodies are inner frames: not soft even inside an if.
    check_body(s.body, s.kind == stmt_kind::if_ ? soft : false);
    check_body(s.else_body, false);
}

void check_body(const stmt_list& body, bool soft) {
    for (const auto& s : body)
        check_stmt(*s, soft);
}

} // namespace

result<void> check_names(const stmt_list& body) {
    try {
        check_body(body, false);
        return {};
    } catch (const template_error& e) {
        return make_error(std::errc::invalid_argument, e.kind() + ": " + e.what());
    }
}

} // namespace sluice::chat
