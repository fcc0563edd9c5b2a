// Python semantics of Jinja values: truthiness, equality, ordering, str() and repr().
#include "runtime/chat/value.hpp"
#include "runtime/chat/limits.hpp"
#include "runtime/tokenizer/unicode.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace sluice::chat {

void fail(std::string message, std::string kind) {
    throw template_error(std::move(kind), std::move(message));
}

// Lookups are linear: a dict copied key by key costs its square, so they count as steps (limits.hpp).
value* value_dict::find(std::string_view key) {
    budget_step(1 + items.size() / 8);
    for (auto& [k, v] : items) {
        if (k == key)
            return &v;
    }
    return nullptr;
}

const value* value_dict::find(std::string_view key) const {
    budget_step(1 + items.size() / 8);
    for (const auto& [k, v] : items) {
        if (k == key)
            return &v;
    }
    return nullptr;
}

namespace {

// The nesting of a container holding an item of `item_nesting`, refused past max_nesting.
std::uint32_t nest(std::uint32_t item_nesting) {
    const unsigned limit = active_limits().max_nesting;
    if (item_nesting + 1 > limit)
        fail_limit("max_nesting", limit, "lists and dicts inside one another");
    return item_nesting + 1;
}

} // namespace

static_assert(sizeof(value) <= 32, "values stay small: limits count list slots in sizeof(value)");

void value_dict::set(std::string key, value v) {
    if (!is_namespace)
        depth = std::max(depth, nest(v.nesting()));
    if (value* existing = find(key)) {
        *existing = std::move(v);
        return;
    }
    budget_charge(sizeof(items[0]) + key.size());
    items.emplace_back(std::move(key), std::move(v));
}

bool value_dict::erase(std::string_view key) {
    for (auto it = items.begin(); it != items.end(); ++it) {
        if (it->first == key) {
            items.erase(it);
            return true;
        }
    }
    return false;
}

const value* call_args::get(std::string_view name, std::size_t index) const {
    for (const auto& [k, v] : keywords) {
        if (k == name)
            return &v;
    }
    if (index < positional.size())
        return &positional[index];
    return nullptr;
}

value::value(std::string s) {
    budget_charge(s.size());
    data_ = shared_text{std::make_shared<const std::string>(std::move(s))};
}

value::value(markup_text m) {
    budget_charge(m.text.size());
    data_ = shared_markup{std::make_shared<const std::string>(std::move(m.text))};
}

value::value(std::shared_ptr<value_list> l) {
    std::uint32_t deepest = 0;
    for (const auto& item : *l)
        deepest = std::max(deepest, item.nesting());
    budget_charge(l->size() * sizeof(value));
    data_ = list_ref{std::move(l), false, nest(deepest)};
}

value::value(std::shared_ptr<generator_value> g) {
    std::uint32_t deepest = 0;
    for (const auto& item : g->items)
        deepest = std::max(deepest, item.nesting());
    budget_charge(g->items.size() * sizeof(value));
    g->depth = nest(deepest);
    data_ = std::move(g);
}

const std::string& value::undefined_hint() const {
    static const undefined_detail plain;
    const auto& d = get<undefined_info>("Undefined").detail;
    return d ? d->hint : plain.hint;
}

const std::string& value::undefined_kind() const {
    static const undefined_detail plain;
    const auto& d = get<undefined_info>("Undefined").detail;
    return d ? d->kind : plain.kind;
}

std::uint32_t value::nesting() const noexcept {
    switch (type()) {
    case kind::list:
        return std::get<list_ref>(data_).depth;
    case kind::dict: {
        const auto& d = *std::get<std::shared_ptr<value_dict>>(data_);
        return d.is_namespace ? 0 : d.depth;
    }
    case kind::generator:
        return std::get<std::shared_ptr<generator_value>>(data_)->depth;
    default:
        return 0;
    }
}

void value::fail_wrong_type(const char* wanted) const {
    std::string message = "expected ";
    message += wanted;
    message += ", got '";
    message += type_name();
    message += "'";
    fail(std::move(message));
}

std::int64_t value::as_int() const {
    if (const auto* b = std::get_if<bool>(&data_))
        return *b ? 1 : 0;
    if (const auto* i = std::get_if<std::int64_t>(&data_))
        return *i;
    // Built by appending: GCC 12 misreports operator+ chains (-Wrestrict).
    std::string message = "'";
    message += type_name();
    message += "' object cannot be interpreted as an integer";
    fail(std::move(message));
}

double value::as_number() const {
    switch (type()) {
    case kind::boolean:
        return as_bool() ? 1.0 : 0.0;
    case kind::integer:
        return static_cast<double>(as_int());
    case kind::floating:
        return as_float();
    default:
        fail("expected a number, got " + type_name());
    }
}

bool value::truthy() const {
    switch (type()) {
    case kind::undefined:
    case kind::none:
        return false;
    case kind::boolean:
        return as_bool();
    case kind::integer:
        return as_int() != 0;
    case kind::floating:
        return as_float() != 0.0;
    case kind::string:
        return !as_string().empty();
    case kind::list:
        return !as_list().empty();
    case kind::dict:
        return !as_dict().items.empty();
    case kind::function:
        return true;
    case kind::markup:
        return !as_string().empty();
    case kind::generator:
        return true;
    }
    return false;
}

void value::require_defined() const {
    if (is_undefined())
        fail(undefined_hint().empty() ? "value is undefined" : undefined_hint(), undefined_kind());
}

std::string value::type_name() const {
    switch (type()) {
    case kind::undefined:
        return "Undefined";
    case kind::none:
        return "NoneType";
    case kind::boolean:
        return "bool";
    case kind::integer:
        return "int";
    case kind::floating:
        return "float";
    case kind::string:
        return "str";
    case kind::list:
        return is_tuple() ? "tuple" : "list";
    case kind::dict:
        return as_dict().is_namespace ? "Namespace" : "dict";
    case kind::function:
        return "function";
    case kind::markup:
        return "Markup";
    case kind::generator:
        return as_generator().type_name;
    }
    return "object";
}

bool equals(const value& a, const value& b) {
    if (a.is_number() && b.is_number()) {
        if (!a.is_float() && !b.is_float())
            return a.as_number() == b.as_number();
        return a.as_number() == b.as_number();
    }
    if (a.is_string() && b.is_string())
        return a.as_string() == b.as_string();
    if (a.type() != b.type() || a.is_tuple() != b.is_tuple())
        return false;
    switch (a.type()) {
    case value::kind::undefined:
    case value::kind::none:
        return true;
    case value::kind::string:
        return a.as_string() == b.as_string();
    case value::kind::list: {
        const auto& x = a.as_list();
        const auto& y = b.as_list();
        if (x.size() != y.size())
            return false;
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (!equals(x[i], y[i]))
                return false;
        }
        return true;
    }
    case value::kind::dict: {
        // A namespace is a plain Python object: equal only to itself (and never walked, so cycles are safe).
        if (a.as_dict().is_namespace || b.as_dict().is_namespace)
            return &a.as_dict() == &b.as_dict();
        const auto& x = a.as_dict().items;
        const auto& y = b.as_dict();
        if (x.size() != y.items.size())
            return false;
        for (const auto& [k, v] : x) {
            const value* other = y.find(k);
            if (!other || !equals(v, *other))
                return false;
        }
        return true;
    }
    case value::kind::function:
        return &a.as_function() == &b.as_function();
    case value::kind::generator:
        return &a.as_generator() == &b.as_generator();
    default:
        return false;
    }
}

int compare(const value& a, const value& b, std::string_view op) {
    if (a.is_number() && b.is_number()) {
        double x = a.as_number();
        double y = b.as_number();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list()) {
        const auto& x = a.as_list();
        const auto& y = b.as_list();
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equals(x[i], y[i]))
                return compare(x[i], y[i], op);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    fail("'" + std::string(op) + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() +
         "'");
}

std::string float_repr(double d) {
    if (std::isnan(d))
        return "nan";
    if (std::isinf(d))
        return d > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d);
    std::string s(buf, res.ptr);
    // Python switches to exponent form when the exponent is < -4 or >= 16.
    int exponent = d == 0.0 ? 0 : static_cast<int>(std::floor(std::log10(std::fabs(d))));
    if (exponent < -4 || exponent >= 16) {
        auto sci = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
        s.assign(buf, sci.ptr);
        auto e = s.find('e');
        std::string mant = s.substr(0, e);
        std::string ex = s.substr(e + 1);
        char sign = ex[0] == '-' ? '-' : '+';
        if (ex[0] == '-' || ex[0] == '+')
            ex = ex.substr(1);
        while (ex.size() > 2 && ex[0] == '0')
            ex = ex.substr(1);
        if (ex.size() < 2)
            ex = "0" + ex;
        return mant + "e" + sign + ex;
    }
    auto fixed = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
    s.assign(buf, fixed.ptr);
    if (s.find('.') == std::string::npos)
        s += ".0";
    return s;
}

static std::string repr_string(const std::string& s) {
    bool has_single = s.find('\'') != std::string::npos;
    bool has_double = s.find('"') != std::string::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == static_cast<unsigned char>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += quote;
    return out;
}

namespace {

// Python's repr of containers, written into one string: a list or dict met again inside itself prints as
// "[...]" / "{...}" as Python's reprlib guard does (only namespaces make cycles), and nesting deeper than
// max_nesting (a chain of namespaces) raises RecursionError as Python does past its recursion limit.
struct repr_writer {
    std::string out;
    std::vector<const void*> open; // containers being written

    bool enter(const void* p) {
        if (std::find(open.begin(), open.end(), p) != open.end())
            return false;
        if (open.size() >= active_limits().max_nesting)
            fail("maximum recursion depth exceeded while getting the repr of an object", "RecursionError");
        open.push_back(p);
        return true;
    }
    void append(std::string_view s) {
        out += s;
        check_growth(out.size());
    }
    void write_items(const value_dict& d) {
        bool first = true;
        for (const auto& [k, item] : d.items) {
            if (!first)
                append(", ");
            first = false;
            write(key_value(k));
            append(": ");
            write(item);
        }
    }
    void write_list(const value& v) {
        const value_list& items = v.as_list();
        if (!enter(&items)) {
            append(v.is_tuple() ? "(...)" : "[...]");
            return;
        }
        append(v.is_tuple() ? "(" : "[");
        for (std::size_t i = 0; i < items.size(); ++i) {
            budget_step();
            if (i > 0)
                append(", ");
            write(items[i]);
        }
        append(v.is_tuple() ? (items.size() == 1 ? ",)" : ")") : "]");
        open.pop_back();
    }
    // A namespace prints as "<Namespace {attrs}>"; like Python, the guard is on the attribute dict, so a
    // namespace met again inside itself prints as "<Namespace {...}>".
    void write_dict(const value_dict& d) {
        if (d.is_namespace)
            append("<Namespace ");
        if (!enter(&d)) {
            append("{...}");
        } else {
            append("{");
            write_items(d);
            append("}");
            open.pop_back();
        }
        if (d.is_namespace)
            append(">");
    }
    void write(const value& v) {
        budget_step();
        if (v.is_list())
            write_list(v);
        else if (v.is_dict())
            write_dict(v.as_dict());
        else
            append(scalar_repr(v));
    }
    static std::string scalar_repr(const value& v);
};

std::string repr_writer::scalar_repr(const value& v) {
    switch (v.type()) {
    case value::kind::undefined:
        return "Undefined";
    case value::kind::none:
        return "None";
    case value::kind::boolean:
        return v.as_bool() ? "True" : "False";
    case value::kind::integer:
        return std::to_string(v.as_int());
    case value::kind::floating:
        return float_repr(v.as_float());
    case value::kind::string:
        return repr_string(v.as_string());
    case value::kind::function:
        return "<function " + v.as_function().name + ">";
    case value::kind::markup:
        return "Markup(" + repr_string(v.as_string()) + ")";
    case value::kind::generator:
        return "<" + v.as_generator().type_name + " object>";
    default:
        return "";
    }
}

} // namespace

std::string to_repr(const value& v) {
    repr_writer w;
    w.write(v);
    return std::move(w.out);
}

std::string to_str(const value& v) {
    if (v.is_undefined())
        return "";
    if (v.is_string())
        return v.as_string();
    return to_repr(v);
}

// Non-string keys are stored as "\x01" + repr; a real string key never starts with that control character
// in templates (a collision would only merge two keys).
std::string dict_key(const value& v) {
    if (v.is_string())
        return v.as_string();
    v.require_defined();
    std::string key(1, '\x01');
    if (v.is_bool())
        key += v.as_bool() ? "1" : "0";
    else if (v.is_float() && v.as_float() == std::floor(v.as_float()) && std::fabs(v.as_float()) < 9.2e18)
        key += std::to_string(static_cast<std::int64_t>(v.as_float()));
    else if (v.is_int() || v.is_float() || v.is_none())
        key += to_repr(v);
    else
        fail("unhashable type: '" + v.type_name() + "'");
    return key;
}

value key_value(const std::string& key) {
    if (key.empty() || key[0] != '\x01')
        return value(key);
    std::string r = key.substr(1);
    if (r == "None")
        return value(nullptr);
    if (r.find_first_of(".en") != std::string::npos)
        return value(std::stod(r));
    return value(static_cast<std::int64_t>(std::stoll(r)));
}

namespace {

// Upper-case partner of a lower-case letter (or the letter itself).
unsigned to_upper_cp(unsigned c) {
    if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) ||
        (c >= 0x430 && c <= 0x44F))
        return c - 0x20;
    if (c == 0x3C2)
        return 0x3A3;
    if (c >= 0x450 && c <= 0x45F)
        return c - 0x50;
    if (c == 0xFF)
        return 0x178;
    bool even_upper = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if ((even_upper && c % 2 == 1) || (odd_upper && c % 2 == 0))
        return c - 1;
    return c;
}

unsigned to_lower_cp(unsigned c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) ||
        (c >= 0x410 && c <= 0x42F))
        return c + 0x20;
    if (c >= 0x400 && c <= 0x40F)
        return c + 0x50;
    if (c == 0x178)
        return 0xFF;
    bool even_upper = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if ((even_upper && c % 2 == 0) || (odd_upper && c % 2 == 1))
        return c + 1;
    return c;
}

} // namespace

std::string change_case(std::string_view s, bool upper) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len = 1;
        const unsigned cp = tokenizer::decode_utf8(s, i, len);
        if (len == 1 && static_cast<unsigned char>(s[i]) >= 0x80) {
            out += s[i++]; // a byte of an invalid sequence passes through unchanged
            continue;
        }
        i += len;
        if (upper && cp == 0xDF) {
            out += "SS";
            continue;
        }
        tokenizer::append_utf8(out, upper ? to_upper_cp(cp) : to_lower_cp(cp));
    }
    return out;
}

std::size_t utf8_length(std::string_view s) {
    std::size_t n = 0;
    for (unsigned char c : s) {
        if ((c & 0xC0) != 0x80)
            ++n;
    }
    return n;
}

std::vector<std::string> utf8_chars(std::string_view s) {
    budget_step(s.size() / 16); // one string per character
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i + 1;
        while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80)
            ++j;
        out.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

std::string escape_html(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&#34;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

} // namespace sluice::chat
