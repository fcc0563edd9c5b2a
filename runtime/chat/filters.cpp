// Jinja filters (`x | name(args)`) with jinja2's semantics, plus Hugging Face's `tojson`.
#include "runtime/chat/evaluator.hpp"

#include "runtime/chat/int_math.hpp"
#include "runtime/chat/limits.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

namespace sluice::chat {

value tojson_filter(const value& input, const call_args& args);

namespace {

using filter_fn = value (*)(const value&, call_args&);

const value* arg(const call_args& a, std::string_view name, std::size_t index) {
    return a.get(name, index);
}

// Wraps filter results that jinja2 produces lazily.
value make_generator(value_list items, std::string type_name = "generator") {
    return value(std::make_shared<generator_value>(generator_value{std::move(type_name), std::move(items)}));
}

std::string lower_ascii(const std::string& s) {
    return change_case(s, false);
}

// Resolves a dotted attribute path ("function.name") the way jinja2's make_attrgetter does.
value attribute_path(const value& item, const value& path) {
    if (path.is_int())
        return get_item(item, path);
    value cur = item;
    std::string p = to_str(path);
    std::size_t start = 0;
    while (true) {
        std::size_t dot = p.find('.', start);
        std::string part = p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        std::int64_t index = 0;
        if (numeric && std::from_chars(part.data(), part.data() + part.size(), index).ec != std::errc())
            numeric = false; // too long for an index: looked up as a key, as jinja2 would find nothing either
        cur = numeric ? get_item(cur, value(index)) : get_item(cur, value(part));
        if (dot == std::string::npos)
            return cur;
        start = dot + 1;
    }
}

value f_length(const value& v, call_args&) {
    if (v.is_dict() && v.as_dict().is_namespace)
        fail("object of type 'Namespace' has no len()");
    switch (v.type()) {
    case value::kind::undefined:
        return value(0);
    case value::kind::string:
        return value(static_cast<std::int64_t>(utf8_length(v.as_string())));
    case value::kind::list:
        return value(static_cast<std::int64_t>(v.as_list().size()));
    case value::kind::dict:
        return value(static_cast<std::int64_t>(v.as_dict().items.size()));
    default:
        fail("object of type '" + v.type_name() + "' has no len()");
    }
}

value f_default(const value& v, call_args& a) {
    const value* boolean = arg(a, "boolean", 1);
    bool use_default = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    if (!use_default)
        return v;
    const value* d = arg(a, "default_value", 0);
    return d ? *d : value(std::string());
}

value f_join(const value& v, call_args& a) {
    const value* sep = arg(a, "d", 0);
    const value* attribute = arg(a, "attribute", 1);
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
        if (!first && sep)
            out += to_str(*sep);
        first = false;
        out += to_str(attribute ? attribute_path(item, *attribute) : item);
        check_growth(out.size());
    }
    return value(std::move(out));
}

value f_trim(const value& v, call_args& a) {
    call_args m;
    if (const value* chars = arg(a, "chars", 0))
        m.positional.push_back(*chars);
    return get_method(value(to_str(v)), "strip").as_function().call(m);
}

value f_string_method(const value& v, const char* method) {
    call_args none;
    return get_method(value(to_str(v)), method).as_function().call(none);
}
value f_upper(const value& v, call_args&) {
    return f_string_method(v, "upper");
}
value f_lower(const value& v, call_args&) {
    return f_string_method(v, "lower");
}
value f_capitalize(const value& v, call_args&) {
    return f_string_method(v, "capitalize");
}
// jinja2's title: upper-cases the first character after whitespace, '-', or an opening bracket.
value f_title(const value& v, call_args&) {
    std::string out;
    bool start = true;
    for (const std::string& ch : utf8_chars(to_str(v))) {
        char c = ch.size() == 1 ? ch[0] : 'x';
        bool separator = ch.size() == 1 && (std::isspace(static_cast<unsigned char>(c)) || c == '-' || c == '(' ||
                                            c == '{' || c == '[' || c == '<');
        out += separator ? ch : change_case(ch, start);
        start = separator;
    }
    return value(std::move(out));
}

// batch(n, fill_with=None): lists of n items; the last one padded with fill_with when given.
value f_batch(const value& v, call_args& a) {
    const value* n = arg(a, "linecount", 0);
    const value* fill = arg(a, "fill_with", 1);
    std::int64_t size = n ? n->as_int() : 1;
    if (size <= 0)
        fail("batch size must be positive", "FilterArgumentError");
    if (fill && !fill->is_none())
        check_growth(static_cast<std::uint64_t>(size) > active_limits().max_value_bytes / sizeof(value)
                         ? active_limits().max_value_bytes + 1
                         : static_cast<std::size_t>(size) * sizeof(value));
    value_list out;
    value_list current;
    for (const auto& item : iterate(v)) {
        current.push_back(item);
        if (static_cast<std::int64_t>(current.size()) == size) {
            out.push_back(value::make_list(std::move(current)));
            current.clear();
        }
    }
    if (!current.empty()) {
        while (fill && !fill->is_none() && static_cast<std::int64_t>(current.size()) < size)
            current.push_back(*fill);
        out.push_back(value::make_list(std::move(current)));
    }
    return make_generator(std::move(out));
}

value f_replace(const value& v, call_args& a) {
    call_args m;
    m.positional = a.positional;
    if (const value* c = arg(a, "count", 2); c && !c->is_none()) {
        m.positional.resize(2);
        m.positional.push_back(*c);
    }
    if (m.positional.size() >= 2) {
        m.positional[0] = value(to_str(m.positional[0]));
        m.positional[1] = value(to_str(m.positional[1]));
    }
    return get_method(value(to_str(v)), "replace").as_function().call(m);
}

value f_first(const value& v, call_args&) {
    value_list items = iterate(v);
    if (items.empty())
        return value::undefined("No first item, sequence was empty.");
    return items.front();
}

value f_last(const value& v, call_args&) {
    if (!v.is_undefined() && !v.is_list() && !v.is_string() && !v.is_dict())
        fail("'" + v.type_name() + "' object is not reversible");
    value_list items = iterate(v);
    if (items.empty())
        return value::undefined("No last item, sequence was empty.");
    return items.back();
}

value f_list(const value& v, call_args&) {
    return value::make_list(iterate(v));
}
value f_string(const value& v, call_args&) {
    return value(to_str(v));
}
value f_safe(const value& v, call_args&) {
    return v.is_markup() ? v : value(markup_text{to_str(v)});
}

value f_int(const value& v, call_args& a) {
    const value* d = arg(a, "default", 0);
    value fallback = d ? *d : value(0);
    if (v.is_int())
        return v;
    if (v.is_bool())
        return value(std::int64_t{v.as_bool()});
    if (v.is_float())
        return value(checked_float_to_int(v.as_float()));
    if (!v.is_string())
        return fallback;
    try {
        std::size_t used = 0;
        std::string s = v.as_string();
        long long i = std::stoll(s, &used);
        if (used == s.size())
            return value(static_cast<std::int64_t>(i));
        double f = std::stod(s, &used);
        if (used == s.size())
            return value(checked_float_to_int(f));
    } catch (const std::logic_error&) { // std::invalid_argument or std::out_of_range from stoll/stod
    }
    return fallback;
}

value f_float(const value& v, call_args& a) {
    const value* d = arg(a, "default", 0);
    if (v.is_number())
        return value(v.as_number());
    if (v.is_string()) {
        try {
            std::size_t used = 0;
            double f = std::stod(v.as_string(), &used);
            if (used == v.as_string().size())
                return value(f);
        } catch (const std::exception&) {
        }
    }
    return d ? *d : value(0.0);
}

value f_abs(const value& v, call_args&) {
    if (v.is_int() || v.is_bool()) {
        std::int64_t i = v.as_int();
        return value(i < 0 ? checked_sub(0, i) : i);
    }
    if (!v.is_float())
        fail("bad operand type for abs(): '" + v.type_name() + "'");
    return value(std::fabs(v.as_float()));
}

// Python's round(): ints stay ints, halves go to the even neighbour.
value f_round(const value& v, call_args& a) {
    if (!v.is_number())
        fail("type " + v.type_name() + " doesn't define __round__ method");
    if (v.is_int() || v.is_bool())
        return value(v.is_bool() ? std::int64_t{v.as_bool()} : v.as_int());
    const value* p = arg(a, "precision", 0);
    double scale = std::pow(10.0, p ? p->as_number() : 0.0);
    return value(std::nearbyint(v.as_float() * scale) / scale);
}

value f_indent(const value& v, call_args& a) {
    const value* w = arg(a, "width", 0);
    std::int64_t width = w && !w->is_string() ? w->as_int() : 4;
    if (width < 0)
        width = 0; // Python's ' ' * -1 is ''
    check_growth(static_cast<std::uint64_t>(width));
    std::string pad = w && w->is_string() ? w->as_string() : std::string(static_cast<std::size_t>(width), ' ');
    const value* first = arg(a, "first", 1);
    const value* blank = arg(a, "blank", 2);
    if (v.is_list())
        fail("'list' object has no attribute 'splitlines'", "AttributeError");
    if (!v.is_string() && !v.is_undefined())
        fail("unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
    call_args none;
    value_list lines = get_method(value(to_str(v) + "\n"), "splitlines").as_function().call(none).as_list();
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i].as_string();
        if (i > 0)
            out += '\n';
        if (i > 0 && (!line.empty() || (blank && blank->truthy())))
            out += pad;
        out += line;
        check_growth(out.size() + pad.size());
    }
    if (first && first->truthy())
        out = pad + out;
    return value(std::move(out));
}

value dict_items(const value& v, bool is_items_filter = true) {
    if (v.is_undefined() && is_items_filter)
        return value::make_list();
    v.require_defined();
    if (!v.is_dict() && is_items_filter)
        fail("Can only get item pairs from a mapping.");
    if (!v.is_dict())
        fail("'" + v.type_name() + "' object has no attribute 'items'", "AttributeError");
    call_args none;
    return get_method(v, "items").as_function().call(none);
}

value f_items(const value& v, call_args&) {
    return make_generator(dict_items(v).as_list());
}

// Sort key comparison with jinja2's default case-insensitive string ordering.
bool sort_less(const value& a, const value& b, bool case_sensitive, std::string_view op = "<") {
    if (!case_sensitive && a.is_string() && b.is_string())
        return lower_ascii(a.as_string()) < lower_ascii(b.as_string());
    return op == ">" ? compare(b, a, op) > 0 : compare(a, b, op) < 0;
}

value f_dictsort(const value& v, call_args& a) {
    const value* cs = arg(a, "case_sensitive", 0);
    const value* by = arg(a, "by", 1);
    const value* rev = arg(a, "reverse", 2);
    bool by_value = by && to_str(*by) == "value";
    value_list pairs = dict_items(v, false).as_list();
    std::stable_sort(pairs.begin(), pairs.end(), [&](const value& x, const value& y) {
        std::size_t k = by_value ? 1 : 0;
        return sort_less(x.as_list()[k], y.as_list()[k], cs && cs->truthy());
    });
    if (rev && rev->truthy())
        std::reverse(pairs.begin(), pairs.end());
    return value::make_list(std::move(pairs));
}

value f_sort(const value& v, call_args& a) {
    const value* rev = arg(a, "reverse", 0);
    const value* cs = arg(a, "case_sensitive", 1);
    const value* attribute = arg(a, "attribute", 2);
    value_list items = iterate(v);
    auto key = [&](const value& x) { return attribute ? attribute_path(x, *attribute) : x; };
    std::stable_sort(items.begin(), items.end(),
                     [&](const value& x, const value& y) { return sort_less(key(x), key(y), cs && cs->truthy()); });
    if (rev && rev->truthy())
        std::reverse(items.begin(), items.end());
    return value::make_list(std::move(items));
}

value f_unique(const value& v, call_args& a) {
    const value* cs = arg(a, "case_sensitive", 0);
    const value* attribute = arg(a, "attribute", 1);
    value_list out;
    value_list seen;
    for (const auto& item : iterate(v)) {
        value k = attribute ? attribute_path(item, *attribute) : item;
        if (!(cs && cs->truthy()) && k.is_string())
            k = value(lower_ascii(k.as_string()));
        if (contains(value::make_list(seen), k))
            continue;
        seen.push_back(k);
        out.push_back(item);
    }
    return make_generator(std::move(out));
}

value min_max(const value& v, call_args& a, bool want_max) {
    const value* cs = arg(a, "case_sensitive", 0);
    const value* attribute = arg(a, "attribute", 1);
    value_list items = iterate(v);
    if (items.empty())
        return value::undefined("No aggregated item, sequence was empty.");
    value best = items[0];
    auto key = [&](const value& x) { return attribute ? attribute_path(x, *attribute) : x; };
    for (const auto& item : items) {
        bool better = want_max ? sort_less(key(best), key(item), cs && cs->truthy(), ">")
                               : sort_less(key(item), key(best), cs && cs->truthy());
        if (better)
            best = item;
    }
    return best;
}
value f_min(const value& v, call_args& a) {
    return min_max(v, a, false);
}
value f_max(const value& v, call_args& a) {
    return min_max(v, a, true);
}

value f_sum(const value& v, call_args& a) {
    const value* attribute = arg(a, "attribute", 0);
    const value* start = arg(a, "start", 1);
    value total = start ? *start : value(0);
    for (const auto& item : iterate(v))
        total = arithmetic("+", total, attribute ? attribute_path(item, *attribute) : item);
    return total;
}

value f_reverse(const value& v, call_args&) {
    if (v.is_string()) {
        auto chars = utf8_chars(v.as_string());
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it)
            out += *it;
        return value(std::move(out));
    }
    bool is_list = v.is_list();
    if (!v.is_undefined() && !is_list && !v.is_dict() && !v.is_generator())
        fail("argument must be iterable", "FilterArgumentError");
    value_list items = iterate(v);
    std::reverse(items.begin(), items.end());
    return is_list ? make_generator(std::move(items), "list_reverseiterator") : value::make_list(std::move(items));
}

value f_map(const value& v, call_args& a) {
    value_list out;
    if (!v.truthy())
        return make_generator({});
    const value* attribute = arg(a, "attribute", static_cast<std::size_t>(-1));
    if (attribute) {
        const value* dflt = arg(a, "default", static_cast<std::size_t>(-1));
        for (const auto& item : iterate(v)) {
            value x = attribute_path(item, *attribute);
            out.push_back(x.is_undefined() && dflt ? *dflt : x);
        }
        return make_generator(std::move(out));
    }
    if (a.positional.empty())
        return make_generator(iterate(v));
    std::string filter = to_str(a.positional[0]);
    call_args rest;
    rest.positional.assign(a.positional.begin() + 1, a.positional.end());
    rest.keywords = a.keywords;
    for (const auto& item : iterate(v)) {
        call_args copy = rest;
        out.push_back(apply_filter(filter, item, copy));
    }
    return make_generator(std::move(out));
}

// select/reject/selectattr/rejectattr share one implementation.
value select_items(const value& v, call_args& a, bool with_attribute, bool keep_when) {
    if (!v.truthy())
        return make_generator({});
    std::size_t next = 0;
    value attribute;
    if (with_attribute) {
        if (a.positional.empty())
            fail("selectattr needs an attribute name");
        attribute = a.positional[next++];
    }
    std::string test = next < a.positional.size() ? to_str(a.positional[next++]) : std::string();
    call_args test_args;
    test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(std::min(next, a.positional.size())),
                                a.positional.end());
    value_list out;
    for (const auto& item : iterate(v)) {
        value subject = with_attribute ? attribute_path(item, attribute) : item;
        call_args copy = test_args;
        bool ok = test.empty() ? subject.truthy() : apply_test(test, subject, copy);
        if (ok == keep_when)
            out.push_back(item);
    }
    return make_generator(std::move(out));
}
value f_select(const value& v, call_args& a) {
    return select_items(v, a, false, true);
}
value f_reject(const value& v, call_args& a) {
    return select_items(v, a, false, false);
}
value f_selectattr(const value& v, call_args& a) {
    return select_items(v, a, true, true);
}
value f_rejectattr(const value& v, call_args& a) {
    return select_items(v, a, true, false);
}

value f_tojson(const value& v, call_args& a) {
    return tojson_filter(v, a);
}

value f_attr(const value& v, call_args& a) {
    const value* name = arg(a, "name", 0);
    return get_attribute(v, name ? to_str(*name) : std::string());
}

value f_escape(const value& v, call_args&) {
    return v.is_markup() ? v : value(markup_text{escape_html(to_str(v))});
}

// printf-style `"%s and %d" | format(a, b)`.
value f_format(const value& v, call_args& a) {
    return value(percent_format(to_str(v), value::make_tuple(a.positional)));
}

// Counts runs of word characters, as jinja2's regex \w+ does (non-ASCII bytes count as word characters).
value f_wordcount(const value& v, call_args&) {
    std::int64_t words = 0;
    bool in_word = false;
    for (char c : to_str(v)) {
        auto u = static_cast<unsigned char>(c);
        bool word = std::isalnum(u) || c == '_' || u >= 0x80;
        if (word && !in_word)
            ++words;
        in_word = word;
    }
    return value(words);
}

const std::map<std::string, filter_fn, std::less<>>& filter_table() {
    static const std::map<std::string, filter_fn, std::less<>> table = {
        {"abs", f_abs},
        {"attr", f_attr},
        {"batch", f_batch},
        {"capitalize", f_capitalize},
        {"count", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"first", f_first},
        {"float", f_float},
        {"format", f_format},
        {"indent", f_indent},
        {"int", f_int},
        {"items", f_items},
        {"join", f_join},
        {"last", f_last},
        {"length", f_length},
        {"list", f_list},
        {"lower", f_lower},
        {"map", f_map},
        {"max", f_max},
        {"min", f_min},
        {"reject", f_reject},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"select", f_select},
        {"selectattr", f_selectattr},
        {"sort", f_sort},
        {"string", f_string},
        {"sum", f_sum},
        {"title", f_title},
        {"tojson", f_tojson},
        {"trim", f_trim},
        {"unique", f_unique},
        {"upper", f_upper},
        {"wordcount", f_wordcount},
    };
    return table;
}

} // namespace

bool has_filter(const std::string& name) {
    return filter_table().count(name) != 0;
}

value apply_filter(const std::string& name, const value& input, call_args& args) {
    const auto& table = filter_table();
    auto it = table.find(name);
    if (it == table.end())
        fail("No filter named '" + name + "' found.", "TemplateRuntimeError");
    // Filters that take an undefined value as '' / [] / 0 (jinja2's Undefined supports str, iter and len).
    static const std::set<std::string, std::less<>> accepts_undefined = {
        "abs",    "batch",      "capitalize", "count",   "d",     "default", "e",      "escape",     "first",
        "items",  "join",       "last",       "length",  "list",  "lower",   "map",    "max",        "min",
        "reject", "rejectattr", "replace",    "reverse", "round", "safe",    "select", "selectattr", "sort",
        "string", "sum",        "title",      "tojson",  "trim",  "unique",  "upper",  "wordcount"};
    if (!accepts_undefined.count(name))
        input.require_defined();
    return it->second(input, args);
}

} // namespace sluice::chat
