// Jinja tests (`x is name(args)`): defined, string, mapping, iterable, comparisons, ...
#include "runtime/chat/evaluator.hpp"

#include <cctype>
#include <optional>

namespace sluice::chat {

namespace {

// Tests about a value's type or truth; nullopt when `name` is not one of them.
std::optional<bool> type_test(const std::string& name, const value& v) {
    if (name == "defined")
        return !v.is_undefined();
    if (name == "undefined")
        return v.is_undefined();
    if (name == "none")
        return v.is_none();
    if (name == "string")
        return v.is_string();
    if (name == "mapping")
        return v.is_dict();
    if (name == "number")
        return v.is_number();
    if (name == "integer")
        return v.is_int();
    if (name == "float")
        return v.is_float();
    if (name == "boolean")
        return v.is_bool();
    if (name == "true")
        return v.is_bool() && v.as_bool();
    if (name == "false")
        return v.is_bool() && !v.as_bool();
    if (name == "callable")
        return v.is_function() || v.is_undefined();
    if (name == "iterable")
        return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_generator();
    if (name == "sequence")
        return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
    return std::nullopt;
}

} // namespace

bool has_test(const std::string& name) {
    static const char* names[] = {
        "defined", "undefined", "none",     "string",   "mapping",     "number", "integer", "float", "boolean",
        "true",    "false",     "callable", "iterable", "sequence",    "eq",     "equalto", "==",    "ne",
        "!=",      "lt",        "lessthan", "<",        "le",          "<=",     "gt",      ">",     "greaterthan",
        "ge",      ">=",        "in",       "sameas",   "divisibleby", "even",   "odd",     "lower", "upper"};
    for (const char* n : names) {
        if (name == n)
            return true;
    }
    return false;
}

bool apply_test(const std::string& name, const value& v, call_args& args) {
    const value* other = args.get("other", 0);
    auto need_other = [&]() -> const value& {
        if (!other)
            fail("test '" + name + "' needs an argument");
        return *other;
    };
    if (std::optional<bool> r = type_test(name, v))
        return *r;
    if (name == "eq" || name == "equalto" || name == "==")
        return equals(v, need_other());
    if (name == "ne" || name == "!=")
        return !equals(v, need_other());
    if (name == "lt" || name == "lessthan" || name == "<")
        return compare(v, need_other()) < 0;
    if (name == "le" || name == "<=")
        return compare(v, need_other()) <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">")
        return compare(v, need_other()) > 0;
    if (name == "ge" || name == ">=")
        return compare(v, need_other()) >= 0;
    if (name == "in")
        return contains(need_other(), v);
    if (name == "sameas") {
        const value& o = need_other();
        if (v.is_list() && o.is_list())
            return &v.as_list() == &o.as_list();
        if (v.is_dict() && o.is_dict())
            return &v.as_dict() == &o.as_dict();
        return v.type() == o.type() && (v.is_none() || v.is_undefined() || equals(v, o));
    }
    if (name == "divisibleby") {
        v.require_defined();
        std::int64_t d = args.get("num", 0) ? args.get("num", 0)->as_int() : 1;
        if (d == 0)
            fail("integer division or modulo by zero", "ZeroDivisionError");
        return d == -1 || v.as_int() % d == 0; // INT64_MIN % -1 traps in C++; every integer divides by -1
    }
    if (name == "even" || name == "odd") {
        v.require_defined();
        return equals(arithmetic("%", v, value(2)), value(name == "even" ? 0 : 1));
    }
    if (name == "lower" || name == "upper") {
        // str.islower / str.isupper: some cased character, and none of the other case.
        std::string s = to_str(v);
        bool want_upper = name == "upper";
        return s == change_case(s, want_upper) && s != change_case(s, !want_upper);
    }
    fail("No test named '" + name + "' found.", "TemplateRuntimeError");
}

} // namespace sluice::chat
