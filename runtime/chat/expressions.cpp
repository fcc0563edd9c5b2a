// Expression evaluation: names, attributes, items, slices, calls, operators, comparisons and literals.
#include "runtime/chat/evaluator.hpp"

#include "runtime/chat/int_math.hpp"
#include "runtime/chat/limits.hpp"

#include <cmath>
#include <optional>

namespace sluice::chat {
namespace {

// jinja2's Undefined hints: "'dict object' has no attribute 'x'" for string names, "list object has no
// element 5" for others (built by appending: GCC 12 misreports operator+ chains).
std::string no_attribute(const value& obj, const value& name) {
    std::string type = obj.is_none() ? std::string("None") : obj.type_name() + " object";
    std::string s;
    if (name.is_string()) {
        s += "'";
        s += type;
        s += "' has no attribute ";
    } else {
        s += type;
        s += " has no element ";
    }
    s += to_repr(name);
    return s;
}

std::int64_t normalize_index(std::int64_t i, std::size_t size) {
    return i < 0 ? i + static_cast<std::int64_t>(size) : i;
}

// Python slice semantics over `size` elements; returns the selected indices.
std::vector<std::size_t> slice_indices(std::size_t size, const value& start, const value& stop, const value& step) {
    auto n = static_cast<std::int64_t>(size);
    std::int64_t st = step.is_none() || step.is_undefined() ? 1 : step.as_int();
    if (st == 0)
        fail("slice step cannot be zero", "ValueError");
    auto clamp = [&](const value& v, std::int64_t dflt) {
        if (v.is_none() || v.is_undefined())
            return dflt;
        std::int64_t i = v.as_int();
        if (i < 0)
            i += n;
        if (st > 0)
            return std::max<std::int64_t>(0, std::min(i, n));
        return std::max<std::int64_t>(-1, std::min(i, n - 1));
    };
    std::int64_t b = clamp(start, st > 0 ? 0 : n - 1);
    std::int64_t e = clamp(stop, st > 0 ? n : -1);
    std::vector<std::size_t> out;
    budget_step(size);
    for (std::int64_t i = b; st > 0 ? i < e : i > e;) {
        out.push_back(static_cast<std::size_t>(i));
        if (__builtin_add_overflow(i, st, &i))
            break; // past either end of the sequence
    }
    return out;
}

} // namespace

value get_attribute(const value& obj, const std::string& name) {
    obj.require_defined();
    if (obj.is_dict()) {
        if (!obj.as_dict().is_namespace) {
            value m = get_method(obj, name);
            if (!m.is_undefined() || !m.undefined_hint().empty())
                return m;
        }
        if (const value* v = obj.as_dict().find(name))
            return *v;
    } else {
        value m = get_method(obj, name);
        if (!m.is_undefined() || !m.undefined_hint().empty())
            return m;
    }
    return value::undefined(no_attribute(obj, value(name)));
}

value get_item(const value& obj, const value& key) {
    obj.require_defined();
    if (obj.is_dict()) {
        // An undefined key is hashable in jinja2 and simply not found.
        if (key.is_undefined())
            return value::undefined(no_attribute(obj, key));
        if (const value* v = obj.as_dict().find(dict_key(key)))
            return *v;
        return value::undefined(no_attribute(obj, key));
    }
    if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        std::int64_t k = key.is_bool() ? (key.as_bool() ? 1 : 0) : key.as_int();
        if (obj.is_list()) {
            std::int64_t i = normalize_index(k, obj.as_list().size());
            if (i >= 0 && i < static_cast<std::int64_t>(obj.as_list().size()))
                return obj.as_list()[static_cast<std::size_t>(i)];
        } else {
            auto chars = utf8_chars(obj.as_string());
            std::int64_t i = normalize_index(k, chars.size());
            if (i >= 0 && i < static_cast<std::int64_t>(chars.size()))
                return value(chars[static_cast<std::size_t>(i)]);
        }
        return value::undefined(no_attribute(obj, key));
    }
    if (key.is_string())
        return get_attribute(obj, key.as_string());
    return value::undefined(no_attribute(obj, key));
}

value_list iterate(const value& v) {
    budget_step(1 + v.nesting());
    switch (v.type()) {
    case value::kind::undefined:
        return {};
    case value::kind::list:
        budget_step(v.as_list().size());
        return v.as_list();
    case value::kind::dict: {
        if (v.as_dict().is_namespace)
            fail("'Namespace' object is not iterable");
        budget_step(v.as_dict().items.size());
        value_list keys;
        for (const auto& [k, item] : v.as_dict().items)
            keys.push_back(key_value(k));
        return keys;
    }
    case value::kind::generator: {
        value_list items = std::move(v.as_generator().items);
        v.as_generator().items.clear();
        return items;
    }
    case value::kind::markup:
    case value::kind::string: {
        budget_step(v.as_string().size());
        value_list chars;
        for (auto& c : utf8_chars(v.as_string()))
            chars.emplace_back(std::move(c));
        return chars;
    }
    default:
        fail("'" + v.type_name() + "' object is not iterable");
    }
}

bool contains(const value& container, const value& item) {
    switch (container.type()) {
    case value::kind::undefined:
        return false;
    case value::kind::markup:
    case value::kind::string:
        if (!item.is_string())
            fail("'in <string>' requires string as left operand, not " + item.type_name());
        budget_step(container.as_string().size() / 256); // a scan: its time counts
        return container.as_string().find(item.as_string()) != std::string::npos;
    case value::kind::list:
        for (const auto& x : container.as_list()) {
            budget_step();
            if (equals(x, item))
                return true;
        }
        return false;
    case value::kind::dict:
        if (container.as_dict().is_namespace)
            fail("argument of type 'Namespace' is not iterable");
        return !item.is_undefined() && container.as_dict().find(dict_key(item)) != nullptr;
    case value::kind::generator:
        return contains(value::make_list(iterate(container)), item);
    default:
        fail("argument of type '" + container.type_name() + "' is not iterable");
    }
}

// Markup text stays as is; plain strings are HTML-escaped (markupsafe.escape).
static std::string html_escape(const value& v) {
    return v.is_markup() ? v.as_string() : escape_html(v.as_string());
}

static value repeat(const value& seq, std::int64_t n) {
    // The size is checked before anything is built: bytes for a string, slots for a list.
    std::size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size() * sizeof(value);
    if (n > 0 && unit > 0 && static_cast<std::uint64_t>(n) > active_limits().max_value_bytes / unit)
        check_growth(active_limits().max_value_bytes + 1);
    if (seq.is_string()) {
        std::string out;
        for (std::int64_t i = 0; i < n; ++i)
            out += seq.as_string();
        return value(std::move(out));
    }
    value_list out;
    for (std::int64_t i = 0; i < n; ++i)
        out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    return value::make_list(std::move(out));
}

// Operators on strings and lists: concatenation (Markup-aware), repetition and %-formatting.
static std::optional<value> sequence_arithmetic(const std::string& op, const value& a, const value& b) {
    if (op == "+") {
        if (a.is_markup() || b.is_markup()) {
            if (a.is_string() && b.is_string())
                return value(markup_text{html_escape(a) + html_escape(b)});
        }
        if (a.is_string() && b.is_string()) {
            check_growth(a.as_string().size() + b.as_string().size());
            return value(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list()) {
            check_growth((a.as_list().size() + b.as_list().size()) * sizeof(value));
            value_list out = a.as_list();
            out.insert(out.end(), b.as_list().begin(), b.as_list().end());
            return value::make_list(std::move(out));
        }
    }
    if (op == "%" && a.is_string())
        return value(percent_format(a.as_string(), b));
    if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
        const value& seq = a.is_string() || a.is_list() ? a : b;
        const value& count = &seq == &a ? b : a;
        if (!count.is_int() && !count.is_bool())
            fail("can't multiply sequence by non-int of type '" + count.type_name() + "'");
        return repeat(seq, count.is_bool() ? std::int64_t{count.as_bool()} : count.as_int());
    }
    return std::nullopt;
}

value arithmetic(const std::string& op, const value& a, const value& b) {
    if (op == "%" && a.is_string() && b.is_undefined())
        return value(percent_format(a.as_string(), b));
    a.require_defined();
    b.require_defined();
    bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
    auto ai = [&] { return a.is_bool() ? std::int64_t{a.as_bool()} : a.as_int(); };
    auto bi = [&] { return b.is_bool() ? std::int64_t{b.as_bool()} : b.as_int(); };
    if (std::optional<value> r = sequence_arithmetic(op, a, b))
        return *r;
    if (!a.is_number() || !b.is_number()) {
        if (op == "+" && (a.is_string() || a.is_list()))
            fail("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
        fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
    }
    if (op == "+")
        return ints ? value(checked_add(ai(), bi())) : value(a.as_number() + b.as_number());
    if (op == "-")
        return ints ? value(checked_sub(ai(), bi())) : value(a.as_number() - b.as_number());
    if (op == "*")
        return ints ? value(checked_mul(ai(), bi())) : value(a.as_number() * b.as_number());
    if (b.as_number() == 0.0 && (op == "/" || op == "//" || op == "%")) {
        if (op == "/")
            fail(ints ? "division by zero" : "float division by zero", "ZeroDivisionError");
        if (op == "//")
            fail(ints ? "integer division or modulo by zero" : "float floor division by zero", "ZeroDivisionError");
        fail(ints ? "integer modulo by zero" : "float modulo", "ZeroDivisionError");
    }
    if (op == "/")
        return value(a.as_number() / b.as_number());
    if (op == "//")
        return ints ? value(checked_floordiv(ai(), bi())) : value(std::floor(a.as_number() / b.as_number()));
    if (op == "%") {
        if (ints)
            return value(checked_mod(ai(), bi()));
        double r = std::fmod(a.as_number(), b.as_number());
        if (r != 0 && ((r < 0) != (b.as_number() < 0)))
            r += b.as_number();
        return value(r);
    }
    if (op == "**") {
        if (ints && bi() >= 0)
            return value(checked_pow(ai(), bi()));
        return value(std::pow(a.as_number(), b.as_number()));
    }
    fail("unknown operator " + op);
}

value evaluator::eval(const expr& e, const scope_ptr& sc) {
    depth_guard depth;
    budget_step();
    switch (e.kind) {
    case expr_kind::literal:
        return e.literal;
    case expr_kind::name:
        return eval_name(e, sc);
    case expr_kind::attribute:
        return get_attribute(eval(*e.operands[0], sc), e.name);
    case expr_kind::subscript:
        return get_item(eval(*e.operands[0], sc), eval(*e.operands[1], sc));
    case expr_kind::slice:
        return eval_slice(e, sc);
    case expr_kind::call:
        return eval_call(e, sc);
    case expr_kind::filter:
        return eval_filter(e, sc, nullptr);
    case expr_kind::test:
        return value(eval_test(e, sc));
    case expr_kind::unary: {
        value v = eval(*e.operands[0], sc);
        if (e.name == "not")
            return value(!v.truthy());
        v.require_defined();
        if (e.name == "-") {
            if (v.is_int() || v.is_bool())
                return value(checked_sub(0, v.as_int()));
            if (v.is_float())
                return value(-v.as_float());
            fail("bad operand type for unary -: '" + v.type_name() + "'");
        }
        return v;
    }
    case expr_kind::binary:
        return eval_binary(e, sc);
    case expr_kind::compare:
        return eval_compare(e, sc);
    case expr_kind::conditional:
        if (eval(*e.operands[1], sc).truthy())
            return eval(*e.operands[0], sc);
        if (e.operands[2])
            return eval(*e.operands[2], sc);
        return value::undefined("the inline if-expression evaluated to false and no else section was defined.");
    case expr_kind::list:
    case expr_kind::tuple: {
        value_list items;
        for (const auto& op : e.operands)
            items.push_back(eval(*op, sc));
        return e.kind == expr_kind::tuple ? value::make_tuple(std::move(items)) : value::make_list(std::move(items));
    }
    case expr_kind::dict: {
        value d = value::make_dict();
        for (std::size_t i = 0; i + 1 < e.operands.size(); i += 2) {
            d.as_dict().set(dict_key(eval(*e.operands[i], sc)), eval(*e.operands[i + 1], sc));
        }
        return d;
    }
    }
    return value();
}

value evaluator::eval_name(const expr& e, const scope_ptr& sc) {
    if (const value* v = sc->lookup(e.name))
        return *v;
    return value::undefined("'" + e.name + "' is undefined");
}

call_args evaluator::eval_args(const expr& e, const scope_ptr& sc) {
    call_args args;
    for (const auto& a : e.args)
        args.positional.push_back(eval(*a, sc));
    for (const auto& [k, a] : e.kwargs)
        args.keywords.emplace_back(k, eval(*a, sc));
    return args;
}

value evaluator::eval_call(const expr& e, const scope_ptr& sc) {
    value callee = eval(*e.operands[0], sc);
    callee.require_defined();
    if (!callee.is_function())
        fail("'" + callee.type_name() + "' object is not callable");
    call_args args = eval_args(e, sc);
    return callee.as_function().call(args);
}

value evaluator::eval_filter(const expr& e, const scope_ptr& sc, value* input) {
    value base;
    if (e.operands.empty()) {
        base = input ? *input : value();
    } else if (e.operands[0]->kind == expr_kind::filter && input) {
        base = eval_filter(*e.operands[0], sc, input);
    } else {
        base = eval(*e.operands[0], sc);
    }
    call_args args = eval_args(e, sc);
    return apply_filter(e.name, base, args);
}

value evaluator::eval_test(const expr& e, const scope_ptr& sc) {
    value subject = eval(*e.operands[0], sc);
    call_args args = eval_args(e, sc);
    bool r = apply_test(e.name, subject, args);
    return value(e.negated ? !r : r);
}

value evaluator::eval_binary(const expr& e, const scope_ptr& sc) {
    if (e.name == "and") {
        value a = eval(*e.operands[0], sc);
        return a.truthy() ? eval(*e.operands[1], sc) : a;
    }
    if (e.name == "or") {
        value a = eval(*e.operands[0], sc);
        return a.truthy() ? a : eval(*e.operands[1], sc);
    }
    value a = eval(*e.operands[0], sc);
    value b = eval(*e.operands[1], sc);
    if (e.name == "~") {
        std::string left = to_str(a);
        std::string right = to_str(b);
        check_growth(left.size() + right.size());
        return value(left + right);
    }
    return arithmetic(e.name, a, b);
}

value evaluator::eval_compare(const expr& e, const scope_ptr& sc) {
    value left = eval(*e.operands[0], sc);
    for (std::size_t i = 0; i < e.ops.size(); ++i) {
        value right = eval(*e.operands[i + 1], sc);
        const std::string& op = e.ops[i];
        bool ok = false;
        if (op == "==")
            ok = equals(left, right);
        else if (op == "!=")
            ok = !equals(left, right);
        else if (op == "in")
            ok = contains(right, left);
        else if (op == "notin")
            ok = !contains(right, left);
        else {
            left.require_defined();
            right.require_defined();
            int c = compare(left, right, op);
            ok = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
        }
        if (!ok)
            return value(false);
        left = std::move(right);
    }
    return value(true);
}

value evaluator::eval_slice(const expr& e, const scope_ptr& sc) {
    value obj = eval(*e.operands[0], sc);
    obj.require_defined();
    value parts[3];
    for (int i = 0; i < 3; ++i)
        parts[i] = e.operands[i + 1] ? eval(*e.operands[i + 1], sc) : value(nullptr);
    if (obj.is_string()) {
        auto chars = utf8_chars(obj.as_string());
        std::string out;
        for (auto i : slice_indices(chars.size(), parts[0], parts[1], parts[2]))
            out += chars[i];
        return value(std::move(out));
    }
    if (obj.is_list()) {
        value_list out;
        for (auto i : slice_indices(obj.as_list().size(), parts[0], parts[1], parts[2]))
            out.push_back(obj.as_list()[i]);
        return value::make_list(std::move(out));
    }
    // jinja2 turns a failed subscript into an undefined value.
    return value::undefined(obj.type_name() + " object has no element slice");
}

} // namespace sluice::chat
