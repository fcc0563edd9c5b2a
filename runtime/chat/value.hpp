// Runtime values of the Jinja engine: Python-like none/bool/int/float/str/list/dict/callable plus undefined.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sluice::chat {

class value;

/// Raised inside the engine when rendering fails; the public API turns it into a `sluice::error`.
/// `kind` names the Python exception jinja2 would raise ("TemplateError", "UndefinedError", ...).
class template_error : public std::runtime_error {
public:
    template_error(std::string kind, std::string message)
        : std::runtime_error(std::move(message)), kind_(std::move(kind)) {}
    const std::string& kind() const noexcept { return kind_; }

private:
    std::string kind_;
};

/// Throws a template_error of kind "TypeError" (or `kind`) with `message`.
[[noreturn]] void fail(std::string message, std::string kind = "TypeError");

using value_list = std::vector<value>;

/// An insertion-ordered dict with string keys (Python dict semantics for the keys templates use).
/// `is_namespace` marks the object `namespace()` returns, whose attributes `set ns.x = ...` may assign.
struct value_dict {
    std::vector<std::pair<std::string, value>> items;
    bool is_namespace = false;

    value* find(std::string_view key);
    const value* find(std::string_view key) const;
    void set(std::string key, value v);
    bool erase(std::string_view key);
};

/// Arguments of a call: positional values then keyword values, in call order.
struct call_args {
    std::vector<value> positional;
    std::vector<std::pair<std::string, value>> keywords;

    /// Returns argument `name` (keyword) or positional `index`, or nullptr when absent.
    const value* get(std::string_view name, std::size_t index) const;
};

/// A callable value: a global function, a bound method or a macro.
struct function_value {
    std::string name;
    std::function<value(call_args&)> call;
};

/// A string marked safe (jinja2's Markup, from the `safe` filter): `+` with a plain string HTML-escapes
/// the plain one, as Python's Markup.__add__ does.
struct markup_text {
    std::string text;
};

/// A one-shot iterator (what jinja2's map/select/reject/selectattr/rejectattr/unique/items/reverse filters
/// return): truthy even when empty, no len(), not JSON-serializable, exhausted after one iteration.
struct generator_value {
    std::string type_name; // "generator" or "list_reverseiterator"
    value_list items;
};

/// A list or tuple: the same shared items; tuples only print and compare differently.
struct list_ref {
    std::shared_ptr<value_list> items;
    bool is_tuple = false;
};

struct undefined_info {
    std::string hint;                    // message raised when the undefined value is used in a way that needs a value
    std::string kind = "UndefinedError"; // exception raised then ("SecurityError" for unsafe attributes)
};

/// A dynamically typed Jinja value. Lists and dicts are shared by reference, as in Python.
class value {
public:
    enum class kind { undefined, none, boolean, integer, floating, string, list, dict, function, markup, generator };

    value() : data_(undefined_info{}) {}
    value(std::nullptr_t) : data_(std::monostate{}) {}
    value(bool b) : data_(b) {}
    value(int i) : data_(std::int64_t{i}) {}
    value(std::int64_t i) : data_(i) {}
    value(double d) : data_(d) {}
    value(std::string s) : data_(std::move(s)) {}
    value(std::string_view s) : data_(std::string(s)) {}
    value(const char* s) : data_(std::string(s)) {}
    value(std::shared_ptr<value_list> l) : data_(list_ref{std::move(l), false}) {}
    value(std::shared_ptr<value_dict> d) : data_(std::move(d)) {}
    value(std::shared_ptr<function_value> f) : data_(std::move(f)) {}
    value(markup_text m) : data_(std::move(m)) {}
    value(std::shared_ptr<generator_value> g) : data_(std::move(g)) {}

    /// An undefined value whose misuse raises UndefinedError with `hint`.
    static value undefined(std::string hint, std::string kind = "UndefinedError") {
        value v;
        v.data_ = undefined_info{std::move(hint), std::move(kind)};
        return v;
    }
    static value make_list(value_list items = {}) { return value(std::make_shared<value_list>(std::move(items))); }
    /// A Python tuple (from `(a, b)` literals and dict item pairs): prints as "(a, b)".
    static value make_tuple(value_list items) {
        value v;
        v.data_ = list_ref{std::make_shared<value_list>(std::move(items)), true};
        return v;
    }
    static value make_dict() { return value(std::make_shared<value_dict>()); }
    static value make_function(std::string name, std::function<value(call_args&)> fn) {
        return value(std::make_shared<function_value>(function_value{std::move(name), std::move(fn)}));
    }

    kind type() const noexcept { return static_cast<kind>(data_.index()); }
    bool is_undefined() const noexcept { return type() == kind::undefined; }
    bool is_none() const noexcept { return type() == kind::none; }
    bool is_bool() const noexcept { return type() == kind::boolean; }
    bool is_int() const noexcept { return type() == kind::integer; }
    bool is_float() const noexcept { return type() == kind::floating; }
    bool is_number() const noexcept { return is_int() || is_float() || is_bool(); }
    bool is_string() const noexcept { return type() == kind::string || type() == kind::markup; }
    bool is_markup() const noexcept { return type() == kind::markup; }
    bool is_generator() const noexcept { return type() == kind::generator; }
    bool is_list() const noexcept { return type() == kind::list; }
    bool is_dict() const noexcept { return type() == kind::dict; }
    bool is_function() const noexcept { return type() == kind::function; }

    bool as_bool() const { return std::get<bool>(data_); }
    std::int64_t as_int() const { return std::get<std::int64_t>(data_); }
    double as_float() const { return std::get<double>(data_); }
    /// Numeric value of a bool/int/float as double.
    double as_number() const;
    const std::string& as_string() const {
        if (const auto* m = std::get_if<markup_text>(&data_))
            return m->text;
        return std::get<std::string>(data_);
    }
    generator_value& as_generator() const { return *std::get<std::shared_ptr<generator_value>>(data_); }
    value_list& as_list() const { return *std::get<list_ref>(data_).items; }
    bool is_tuple() const noexcept { return is_list() && std::get<list_ref>(data_).is_tuple; }
    value_dict& as_dict() const { return *std::get<std::shared_ptr<value_dict>>(data_); }
    const function_value& as_function() const { return *std::get<std::shared_ptr<function_value>>(data_); }
    const std::string& undefined_hint() const { return std::get<undefined_info>(data_).hint; }
    const std::string& undefined_kind() const { return std::get<undefined_info>(data_).kind; }

    /// Python truthiness (undefined is false).
    bool truthy() const;
    /// Raises UndefinedError if this value is undefined.
    void require_defined() const;
    /// Python type name ("str", "dict", ...), as used in jinja2 error messages.
    std::string type_name() const;

private:
    std::variant<undefined_info, std::monostate, bool, std::int64_t, double, std::string, list_ref,
                 std::shared_ptr<value_dict>, std::shared_ptr<function_value>, markup_text,
                 std::shared_ptr<generator_value>>
        data_;
};

/// Python `==` between two values.
bool equals(const value& a, const value& b);
/// Python `<` ordering for numbers and strings (TypeError otherwise); returns <0, 0, >0.
/// `op` names the operator in the TypeError message.
int compare(const value& a, const value& b, std::string_view op = "<");

/// Python `str(v)` (how `{{ v }}` prints): repr for items inside containers, '' for undefined.
std::string to_str(const value& v);

/// `text` with & < > " ' replaced by HTML entities, as markupsafe.escape writes them.
std::string escape_html(std::string_view text);
/// Python `repr(v)`.
std::string to_repr(const value& v);
/// Python float repr ("1.0", "1e+16", "0.1").
std::string float_repr(double d);

/// The dict key of `v`: strings are themselves; other keys (ints in `{0: 1}`) get a private encoding.
std::string dict_key(const value& v);
/// Inverse of dict_key: the key as the template sees it.
value key_value(const std::string& key);

/// Python str.upper()/str.lower() for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters.
std::string change_case(std::string_view s, bool upper);

/// Number of Unicode code points in a UTF-8 string.
std::size_t utf8_length(std::string_view s);
/// Splits UTF-8 into one string per code point.
std::vector<std::string> utf8_chars(std::string_view s);

} // namespace sluice::chat
