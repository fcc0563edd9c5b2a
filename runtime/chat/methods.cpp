// Python methods of str, dict and list values that templates call (`s.strip()`, `d.items()`, `'{}'.format(x)`).
#include "runtime/chat/evaluator.hpp"

#include "runtime/chat/int_math.hpp"
#include "runtime/chat/limits.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace sluice::chat {
namespace {

bool py_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string arg_string(const call_args& args, std::string_view name, std::size_t index, const std::string& method) {
    const value* v = args.get(name, index);
    if (!v)
        fail(method + "() missing required argument");
    if (!v->is_string())
        fail(method + "() argument must be str, not " + v->type_name());
    return v->as_string();
}

// Python str.strip/lstrip/rstrip with an optional set of characters (nullopt: whitespace).
std::string strip_chars(const std::string& s, const value* chars, bool left, bool right) {
    auto drop = [&](char c) {
        if (!chars || chars->is_none())
            return py_space(c);
        return chars->as_string().find(c) != std::string::npos;
    };
    std::size_t b = 0;
    std::size_t e = s.size();
    if (left) {
        while (b < e && drop(s[b]))
            ++b;
    }
    if (right) {
        while (e > b && drop(s[e - 1]))
            --e;
    }
    return s.substr(b, e - b);
}

value_list split_string(const std::string& s, const value* sep, std::int64_t maxsplit) {
    value_list out;
    if (!sep || sep->is_none()) {
        std::size_t i = 0;
        while (true) {
            while (i < s.size() && py_space(s[i]))
                ++i;
            if (i >= s.size())
                break;
            if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
                std::size_t e = s.size();
                while (e > i && py_space(s[e - 1]))
                    --e;
                out.emplace_back(s.substr(i, e - i));
                break;
            }
            std::size_t j = i;
            while (j < s.size() && !py_space(s[j]))
                ++j;
            out.emplace_back(s.substr(i, j - i));
            i = j;
        }
        return out;
    }
    const std::string& d = sep->as_string();
    if (d.empty())
        fail("empty separator", "ValueError");
    std::size_t start = 0;
    while (true) {
        std::size_t p = s.find(d, start);
        if (p == std::string::npos || (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit)) {
            out.emplace_back(s.substr(start));
            return out;
        }
        out.emplace_back(s.substr(start, p - start));
        start = p + d.size();
    }
}

value_list rsplit_string(const std::string& s, const value* sep, std::int64_t maxsplit) {
    if (maxsplit < 0)
        return split_string(s, sep, -1);
    if (!sep || sep->is_none())
        fail("rsplit without separator is not supported");
    const std::string& d = sep->as_string();
    value_list out;
    std::size_t end = s.size();
    while (static_cast<std::int64_t>(out.size()) < maxsplit) {
        std::size_t p = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
        if (p == std::string::npos)
            break;
        out.insert(out.begin(), value(s.substr(p + d.size(), end - p - d.size())));
        end = p;
    }
    out.insert(out.begin(), value(s.substr(0, end)));
    return out;
}

bool affix_matches(const std::string& s, const value& affix, bool prefix) {
    if (affix.is_list()) {
        return std::any_of(affix.as_list().begin(), affix.as_list().end(),
                           [&](const value& a) { return affix_matches(s, a, prefix); });
    }
    if (!affix.is_string())
        fail("startswith/endswith argument must be str or a tuple of str");
    const std::string& a = affix.as_string();
    if (a.size() > s.size())
        return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
    if (from.empty()) {
        std::string out;
        auto chars = utf8_chars(s);
        std::int64_t n = 0;
        for (auto& c : chars) {
            if (count < 0 || n++ < count)
                out += to;
            out += c;
            check_growth(out.size());
        }
        if (count < 0 || n < count)
            out += to;
        return out;
    }
    std::string out;
    std::size_t start = 0;
    std::int64_t n = 0;
    while (count < 0 || n < count) {
        std::size_t p = s.find(from, start);
        if (p == std::string::npos)
            break;
        out.append(s, start, p - start);
        out += to;
        check_growth(out.size());
        start = p + from.size();
        ++n;
    }
    out.append(s, start);
    return out;
}

// Python str.format with `{}`, `{0}`, `{name}` fields and `{{`/`}}` escapes (format specs are not supported).
std::string format_string(const std::string& fmt, const call_args& args) {
    std::string out;
    std::size_t auto_index = 0;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
        } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
            out += '}';
            ++i;
        } else if (c == '{') {
            std::size_t close = fmt.find('}', i);
            if (close == std::string::npos)
                fail("Single '{' encountered in format string", "ValueError");
            std::string field = fmt.substr(i + 1, close - i - 1);
            const value* v = nullptr;
            if (field.empty())
                v = args.get("", auto_index++);
            else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
                std::size_t index = 0;
                if (std::from_chars(field.data(), field.data() + field.size(), index).ec != std::errc())
                    fail("Too many decimal digits in format string", "ValueError");
                v = args.get("", index);
            }
            else
                v = args.get(field, static_cast<std::size_t>(-1));
            if (!v)
                fail("Replacement index out of range for positional args tuple", "IndexError");
            out += to_str(*v);
            check_growth(out.size());
            i = close;
        } else {
            out += c;
        }
    }
    return out;
}

std::string ascii_case(const std::string& s, bool upper) {
    return change_case(s, upper);
}

// str.find/rfind/index/count; positions are in code points.
value search_method(const std::string& s, const std::string& name, call_args& a) {
    std::string sub = arg_string(a, "sub", 0, name);
    if (name == "count") {
        if (sub.empty())
            return value(static_cast<std::int64_t>(utf8_length(s) + 1));
        std::int64_t n = 0;
        for (std::size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size()))
            ++n;
        return value(n);
    }
    std::size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
    if (p == std::string::npos) {
        if (name == "index")
            fail("substring not found", "ValueError");
        return value(-1);
    }
    return value(static_cast<std::int64_t>(utf8_length(s.substr(0, p))));
}

// str.splitlines for \n, \r\n and \r line ends.
value splitlines(const std::string& s) {
    value_list lines;
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r') {
            lines.emplace_back(s.substr(start, i - start));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')
                ++i;
            start = i + 1;
        }
    }
    if (start < s.size())
        lines.emplace_back(s.substr(start));
    return value::make_list(std::move(lines));
}

value predicate_method(const std::string& s, const std::string& name);
value case_method(const std::string& s, const std::string& name);

value string_method(const std::string& s, const std::string& name, call_args& a) {
    budget_step(s.size() / 256); // every string method walks the string at least once
    auto maxsplit = [&] {
        const value* m = a.get("maxsplit", 1);
        return m ? m->as_int() : std::int64_t{-1};
    };
    if (name == "strip")
        return value(strip_chars(s, a.get("chars", 0), true, true));
    if (name == "lstrip")
        return value(strip_chars(s, a.get("chars", 0), true, false));
    if (name == "rstrip")
        return value(strip_chars(s, a.get("chars", 0), false, true));
    if (name == "split")
        return value::make_list(split_string(s, a.get("sep", 0), maxsplit()));
    if (name == "rsplit")
        return value::make_list(rsplit_string(s, a.get("sep", 0), maxsplit()));
    if (name == "upper")
        return value(ascii_case(s, true));
    if (name == "lower")
        return value(ascii_case(s, false));
    if (name == "startswith" || name == "endswith") {
        const value* affix = a.get("prefix", 0);
        if (!affix)
            fail(name + "() takes at least 1 argument (0 given)");
        return value(affix_matches(s, *affix, name == "startswith"));
    }
    if (name == "replace") {
        const value* count = a.get("count", 2);
        return value(
            replace_all(s, arg_string(a, "old", 0, name), arg_string(a, "new", 1, name), count ? count->as_int() : -1));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "count")
        return search_method(s, name, a);
    if (name == "format")
        return value(format_string(s, a));
    if (name == "join") {
        std::string out;
        bool first = true;
        for (const auto& item : iterate(a.positional.empty() ? value() : a.positional[0])) {
            if (!first)
                out += s;
            first = false;
            out += to_str(item);
            check_growth(out.size());
        }
        return value(std::move(out));
    }
    if (name == "capitalize" || name == "title")
        return case_method(s, name);
    if (name == "splitlines")
        return splitlines(s);
    return predicate_method(s, name);
}

// str.capitalize and str.title; a character is cased when its upper and lower forms differ.
value case_method(const std::string& s, const std::string& name) {
    std::string out;
    bool first = true;
    bool prev_cased = false;
    for (const std::string& ch : utf8_chars(s)) {
        bool cased = change_case(ch, true) != change_case(ch, false);
        bool up = name == "capitalize" ? first : !prev_cased;
        out += change_case(ch, up);
        first = false;
        prev_cased = cased;
    }
    return value(std::move(out));
}

// str.isdigit/isalpha/isalnum/isspace/islower/isupper (ASCII classes).
value predicate_method(const std::string& s, const std::string& name) {
    auto all_of = [&](auto pred) {
        return value(!s.empty() &&
                     std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); }));
    };
    if (name == "isdigit")
        return all_of([](unsigned char c) { return std::isdigit(c) != 0; });
    if (name == "isalpha")
        return all_of([](unsigned char c) { return std::isalpha(c) != 0; });
    if (name == "isalnum")
        return all_of([](unsigned char c) { return std::isalnum(c) != 0; });
    if (name == "isspace")
        return all_of([](unsigned char c) { return py_space(static_cast<char>(c)); });
    if (name == "islower")
        return value(s == ascii_case(s, false) && s != ascii_case(s, true));
    if (name == "isupper")
        return value(s == ascii_case(s, true) && s != ascii_case(s, false));
    fail("'str' object has no attribute '" + name + "'", "AttributeError");
}

value dict_method(const value& self, const std::string& name, call_args& a) {
    const value_dict& d = self.as_dict();
    if (name == "get") {
        const value* key = a.get("key", 0);
        if (!key)
            fail("get expected at least 1 argument, got 0");
        if (const value* v = d.find(dict_key(*key)))
            return *v;
        const value* dflt = a.get("default", 1);
        return dflt ? *dflt : value(nullptr);
    }
    if (name == "items") {
        value_list out;
        for (const auto& [k, v] : d.items)
            out.push_back(value::make_tuple({key_value(k), v}));
        return value::make_list(std::move(out));
    }
    if (name == "keys" || name == "values") {
        value_list out;
        for (const auto& [k, v] : d.items)
            out.push_back(name == "keys" ? key_value(k) : v);
        return value::make_list(std::move(out));
    }
    if (name == "copy") {
        value c = value::make_dict();
        budget_charge(d.items.size() * sizeof(d.items[0]));
        c.as_dict().items = d.items;
        c.as_dict().depth = d.depth;
        return c;
    }
    fail("'dict' object has no attribute '" + name + "'", "AttributeError");
}

value list_method(const value& self, const std::string& name, call_args& a) {
    const value_list& l = self.as_list();
    const value* x = a.get("value", 0);
    if (name == "index" || name == "count") {
        if (!x)
            fail(name + "() takes exactly one argument (0 given)");
        std::int64_t n = 0;
        for (std::size_t i = 0; i < l.size(); ++i) {
            if (!equals(l[i], *x))
                continue;
            if (name == "index")
                return value(static_cast<std::int64_t>(i));
            ++n;
        }
        if (name == "index")
            fail(to_repr(*x) + " is not in list", "ValueError");
        return value(n);
    }
    if (name == "copy")
        return value::make_list(l);
    fail("'list' object has no attribute '" + name + "'", "AttributeError");
}

bool is_unsafe_method(const value& obj, const std::string& name) {
    static const char* list_mutators[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
    static const char* dict_mutators[] = {"pop", "popitem", "setdefault", "update", "clear"};
    if (obj.is_list())
        return std::any_of(std::begin(list_mutators), std::end(list_mutators),
                           [&](const char* m) { return name == m; });
    if (obj.is_dict())
        return std::any_of(std::begin(dict_mutators), std::end(dict_mutators),
                           [&](const char* m) { return name == m; });
    return false;
}

bool has_method(const value& obj, const std::string& name) {
    static const char* str_methods[] = {
        "strip",      "lstrip",  "rstrip",  "split",   "rsplit",  "upper",   "lower",  "startswith", "endswith",
        "replace",    "find",    "rfind",   "index",   "count",   "format",  "join",   "capitalize", "title",
        "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper"};
    static const char* dict_methods[] = {"get", "items", "keys", "values", "copy"};
    static const char* list_methods[] = {"index", "count", "copy"};
    auto in = [&](const auto& table) {
        return std::any_of(std::begin(table), std::end(table), [&](const char* m) { return name == m; });
    };
    if (obj.is_string())
        return in(str_methods);
    if (obj.is_dict())
        return in(dict_methods);
    if (obj.is_list())
        return in(list_methods);
    return false;
}

// One conversion of a printf-style spec ("%5.2f" -> flags "5.2", conversion 'f').
std::string convert_one(const std::string& flags, char conversion, const value& x) {
    if (conversion == 's')
        return to_str(x);
    if (conversion == 'r')
        return to_repr(x);
    // The result must fit `buf`: widths and precisions are small in templates; larger ones are refused.
    for (std::size_t i = 0; i < flags.size();) {
        std::size_t j = i;
        while (j < flags.size() && std::isdigit(static_cast<unsigned char>(flags[j])))
            ++j;
        if (j - i > 2)
            fail("format width or precision above 99 is not supported", "ValueError");
        i = j == i ? i + 1 : j;
    }
    std::string spec = "%" + flags;
    char buf[128] = {};
    if (conversion == 'd' || conversion == 'i' || conversion == 'x' || conversion == 'X' || conversion == 'o') {
        spec += "ll";
        spec += conversion == 'i' ? 'd' : conversion;
        long long n = x.is_float()                ? checked_float_to_int(x.as_float())
                      : x.is_int() || x.is_bool() ? x.as_int()
                                                  : static_cast<long long>(x.as_number()); // as_number raises
        std::snprintf(buf, sizeof buf, spec.c_str(), n);
    } else if (conversion == 'f' || conversion == 'F' || conversion == 'e' || conversion == 'E' || conversion == 'g' ||
               conversion == 'G') {
        spec += conversion;
        std::snprintf(buf, sizeof buf, spec.c_str(), x.as_number());
    } else {
        fail(std::string("unsupported format character '") + conversion + "'", "ValueError");
    }
    return buf;
}

} // namespace

std::string percent_format(const std::string& fmt, const value& args) {
    value_list items = args.is_tuple() ? args.as_list() : value_list{args};
    std::string out;
    std::size_t next = 0;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        std::size_t j = i + 1;
        while (j < fmt.size() && std::string_view("-+ #0123456789.").find(fmt[j]) != std::string_view::npos)
            ++j;
        if (j >= fmt.size())
            fail("incomplete format", "ValueError");
        if (fmt[j] == '%') {
            out += '%';
        } else {
            if (next >= items.size())
                fail("not enough arguments for format string");
            out += convert_one(fmt.substr(i + 1, j - i - 1), fmt[j], items[next++]);
        }
        check_growth(out.size());
        i = j;
    }
    // Like CPython: a lone argument that can be subscripted (list, dict, undefined) may go unused.
    bool lone_mapping = !args.is_tuple() && (args.is_list() || args.is_dict() || args.is_undefined());
    if (next < items.size() && !lone_mapping)
        fail("not all arguments converted during string formatting");
    return out;
}

value get_method(const value& obj, const std::string& name) {
    if (is_unsafe_method(obj, name)) {
        return value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.",
                                "SecurityError");
    }
    if (!has_method(obj, name))
        return value();
    value self = obj;
    return value::make_function(name, [self, name](call_args& a) {
        if (self.is_string())
            return string_method(self.as_string(), name, a);
        if (self.is_dict())
            return dict_method(self, name, a);
        return list_method(self, name, a);
    });
}

} // namespace sluice::chat
