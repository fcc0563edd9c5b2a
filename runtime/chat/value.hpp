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
    /// Nesting of lists and dicts (1 for a dict of scalars); namespaces count as scalars inside it. Kept by
    /// set(); whoever assigns `items` directly sets it too.
    std::uint32_t depth = 1;

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
    std::uint32_t depth = 1; // set when it becomes a value
};

/// A list or tuple: the same shared items; tuples only print and compare differently. `depth` is the
/// nesting of lists and dicts inside it (1 for a list of scalars), fixed at construction: lists never change.
struct list_ref {
    std::shared_ptr<value_list> items;
    bool is_tuple = false;
    std::uint32_t depth = 1;
};

/// Text shared by every copy of a value: copying a string value never copies its bytes.
struct shared_text {
    std::shared_ptr<const std::string> text;
};
/// The same for Markup text.
struct shared_markup {
    std::shared_ptr<const std::string> text;
};

/// Why a value is undefined: the message raised when it is used in a way that needs a value, and the exception
/// raised then ("SecurityError" for unsafe attributes). Shared, so that a value stays small (32 bytes).
struct undefined_detail {
    std::string hint;
    std::string kind = "UndefinedError";
};
struct undefined_info {
    std::shared_ptr<const undefined_detail> detail; // null: no hint, UndefinedError
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
    // Values built while a render runs are charged to its budget (limits.hpp); lists and generators deeper
    // than max_nesting are refused.
    value(std::string s);
    value(std::string_view s) : value(std::string(s)) {}
    value(const char* s) : value(std::string(s)) {}
    value(std::shared_ptr<value_list> l);
    value(std::shared_ptr<value_dict> d) : data_(std::move(d)) {}
    value(std::shared_ptr<function_value> f) : data_(std::move(f)) {}
    value(markup_text m);
    value(std::shared_ptr<generator_value> g);

    /// An undefined value whose misuse raises UndefinedError with `hint`.
    static value undefined(std::string hint, std::string kind = "UndefinedError") {
        value v;
        v.data_ = undefined_info{
            std::make_shared<const undefined_detail>(undefined_detail{std::move(hint), std::move(kind)})};
        return v;
    }
    static value make_list(value_list items = {}) { return value(std::make_shared<value_list>(std::move(items))); }
    /// A Python tuple (from `(a, b)` literals and dict item pairs): prints as "(a, b)".
    static value make_tuple(value_list items) {
        value v = make_list(std::move(items));
        std::get<list_ref>(v.data_).is_tuple = true;
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

    // The accessors raise a TypeError (a template error, never a crash) when the value is of another type.
    bool as_bool() const { return get<bool>("bool"); }
    std::int64_t as_int() const;
    double as_float() const { return get<double>("float"); }
    /// Numeric value of a bool/int/float as double.
    double as_number() const;
    const std::string& as_string() const {
        if (const auto* m = std::get_if<shared_markup>(&data_))
            return *m->text;
        return *get<shared_text>("str").text;
    }
    generator_value& as_generator() const { return *get<std::shared_ptr<generator_value>>("generator"); }
    value_list& as_list() const { return *get<list_ref>("list").items; }
    bool is_tuple() const noexcept { return is_list() && std::get<list_ref>(data_).is_tuple; }
    value_dict& as_dict() const { return *get<std::shared_ptr<value_dict>>("dict"); }
    /// The shared dict itself (namespaces are kept by their identity).
    const std::shared_ptr<value_dict>& dict_ptr() const { return get<std::shared_ptr<value_dict>>("dict"); }
    const function_value& as_function() const { return *get<std::shared_ptr<function_value>>("function"); }
    const std::string& undefined_hint() const;
    const std::string& undefined_kind() const;
    /// Nesting of lists, dicts and generators (0 for scalars, functions and namespaces).
    std::uint32_t nesting() const noexcept;

    /// Python truthiness (undefined is false).
    bool truthy() const;
    /// Raises UndefinedError if this value is undefined.
    void require_defined() const;
    /// Python type name ("str", "dict", ...), as used in jinja2 error messages.
    std::string type_name() const;

private:
    template <class T>
    const T& get(const char* wanted) const {
        if (const T* p = std::get_if<T>(&data_))
            return *p;
        fail_wrong_type(wanted);
    }
    [[noreturn]] void fail_wrong_type(const char* wanted) const;

    std::variant<undefined_info, std::monostate, bool, std::int64_t, double, shared_text, list_ref,
                 std::shared_ptr<value_dict>, std::shared_ptr<function_value>, shared_markup,
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
