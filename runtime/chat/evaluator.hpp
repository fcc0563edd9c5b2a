// Tree-walking evaluator of parsed Jinja templates (internal to runtime/chat).
#pragma once

#include "runtime/chat/ast.hpp"
#include "runtime/chat/value.hpp"

#include <memory>
#include <string>

namespace sluice::chat {

/// A variable scope; lookups walk to the parent. For loops and macro calls open a child scope.
struct scope {
    std::shared_ptr<scope> parent;
    /// Variables, flagged like a namespace's attributes: a scope is no nested value (no depth is kept).
    value_dict vars{{}, true};

    const value* lookup(std::string_view name) const;
};
using scope_ptr = std::shared_ptr<scope>;

/// How a statement list finished: normally, or through `break`/`continue`.
enum class flow { normal, break_, continue_ };

/// Renders statements and evaluates expressions. Failures are thrown as template_error.
class evaluator {
public:
    /// `keepalive` owns the tree that macros defined during rendering point into.
    explicit evaluator(std::shared_ptr<const stmt_list> keepalive) : tree_(std::move(keepalive)) {}

    flow render(const stmt_list& body, const scope_ptr& sc, std::string& out);
    value eval(const expr& e, const scope_ptr& sc);

private:
    flow render_stmt(const stmt& s, const scope_ptr& sc, std::string& out);
    void render_if(const stmt& s, const scope_ptr& sc, std::string& out, flow& f);
    flow render_for(const stmt& s, const scope_ptr& sc, std::string& out);
    void render_set(const stmt& s, const scope_ptr& sc);
    void define_macro(const stmt& s, const scope_ptr& sc);
    void assign(const expr& target, value v, const scope_ptr& sc);

    value eval_name(const expr& e, const scope_ptr& sc);
    value eval_call(const expr& e, const scope_ptr& sc);
    value eval_filter(const expr& e, const scope_ptr& sc, value* input);
    value eval_test(const expr& e, const scope_ptr& sc);
    value eval_binary(const expr& e, const scope_ptr& sc);
    value eval_compare(const expr& e, const scope_ptr& sc);
    value eval_slice(const expr& e, const scope_ptr& sc);
    call_args eval_args(const expr& e, const scope_ptr& sc);

    std::shared_ptr<const stmt_list> tree_;
    int macro_depth_ = 0;
};

/// Python-style attribute access `obj.name` (methods first, then items), jinja2's getattr.
value get_attribute(const value& obj, const std::string& name);
/// Python-style item access `obj[key]` (items first, then attributes), jinja2's getitem.
value get_item(const value& obj, const value& key);
/// Iterates a value as a Python for loop would (dict keys, string characters); undefined iterates empty.
value_list iterate(const value& v);
/// Python arithmetic and concatenation for `op` in + - * / // % **.
value arithmetic(const std::string& op, const value& a, const value& b);
/// Python `a in b`.
bool contains(const value& container, const value& item);

/// Whether a filter / test of that name exists.
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
/// Applies filter `name` to `input` with `args`.
value apply_filter(const std::string& name, const value& input, call_args& args);
/// Evaluates test `name` on `input` with `args`.
bool apply_test(const std::string& name, const value& input, call_args& args);
/// Returns the bound method `name` of a str/list/dict, or undefined when there is none.
value get_method(const value& obj, const std::string& name);
/// Python printf-style formatting, `fmt % args` (args: one value, or a list/tuple of values).
std::string percent_format(const std::string& fmt, const value& args);
/// Serializes a value as Python's json.dumps(ensure_ascii=False, ...) does; indent < 0 means none.
std::string to_json(const value& v, int indent, const std::string& item_sep, const std::string& key_sep,
                    bool sort_keys);

} // namespace sluice::chat
