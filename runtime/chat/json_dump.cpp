// JSON serialization with the exact output of Python's json.dumps (Hugging Face's `tojson` filter).
#include "runtime/chat/evaluator.hpp"

#include "runtime/chat/limits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sluice::chat {
namespace {

struct json_writer {
    int indent;
    std::string item_sep;
    std::string key_sep;
    bool sort_keys;
    bool ensure_ascii;
    std::string out;

    void newline(int level) {
        // indent * level spaces, checked before they are written (tojson(indent=10**9) is one request).
        std::uint64_t pad = static_cast<std::uint64_t>(indent) * static_cast<std::uint64_t>(level);
        check_growth(out.size() + 1 + pad);
        out += '\n';
        out.append(static_cast<std::size_t>(pad), ' ');
    }
    void write_string(const std::string& s);
    void write(const value& v, int level);
    void write_list(const value_list& items, int level);
    void write_dict(const value_dict& dict, int level);
    void write_key(const std::string& stored);
};

void append_u16(std::string& out, unsigned cp) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp & 0xFFFFu); // one UTF-16 unit: always 6 characters
    out += buf;
}

void json_writer::write_string(const std::string& s) {
    out += '"';
    for (std::size_t i = 0; i < s.size(); ++i) {
        auto c = static_cast<unsigned char>(s[i]);
        switch (c) {
        case '"':
            out += "\\\"";
            continue;
        case '\\':
            out += "\\\\";
            continue;
        case '\n':
            out += "\\n";
            continue;
        case '\r':
            out += "\\r";
            continue;
        case '\t':
            out += "\\t";
            continue;
        case '\b':
            out += "\\b";
            continue;
        case '\f':
            out += "\\f";
            continue;
        default:
            break;
        }
        if (c < 0x20) {
            append_u16(out, c);
        } else if (c >= 0x80 && ensure_ascii) {
            int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            unsigned cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0F : 0x1F);
            for (int k = 1; k < len && i + 1 < s.size(); ++k)
                cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                append_u16(out, 0xD800 + (cp >> 10));
                append_u16(out, 0xDC00 + (cp & 0x3FF));
            } else {
                append_u16(out, cp);
            }
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}

void json_writer::write_list(const value_list& items, int level) {
    if (items.empty()) {
        out += "[]";
        return;
    }
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
        budget_step();
        if (i > 0)
            out += item_sep;
        if (indent >= 0)
            newline(level + 1);
        write(items[i], level + 1);
        check_growth(out.size());
    }
    if (indent >= 0)
        newline(level);
    out += ']';
}

// Keys as json.dumps writes them: non-string keys (ints in `{0: 1}`) become their JSON text.
void json_writer::write_key(const std::string& stored) {
    value key = key_value(stored);
    if (key.is_string())
        write_string(key.as_string());
    else if (key.is_bool())
        write_string(key.as_bool() ? "true" : "false");
    else if (key.is_none())
        write_string("null");
    else
        write_string(to_str(key));
}

void json_writer::write_dict(const value_dict& dict, int level) {
    auto items = dict.items;
    if (items.empty()) {
        out += "{}";
        return;
    }
    if (sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out += '{';
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
            out += item_sep;
        if (indent >= 0)
            newline(level + 1);
        budget_step();
        write_key(items[i].first);
        out += key_sep;
        write(items[i].second, level + 1);
        check_growth(out.size());
    }
    if (indent >= 0)
        newline(level);
    out += '}';
}

void json_writer::write(const value& v, int level) {
    switch (v.type()) {
    case value::kind::none:
        out += "null";
        return;
    case value::kind::boolean:
        out += v.as_bool() ? "true" : "false";
        return;
    case value::kind::integer:
        out += std::to_string(v.as_int());
        return;
    case value::kind::floating: {
        double d = v.as_float();
        out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
        return;
    }
    case value::kind::markup:
    case value::kind::string:
        write_string(v.as_string());
        return;
    case value::kind::list:
        write_list(v.as_list(), level);
        return;
    case value::kind::dict:
        // Namespaces are Python objects json.dumps refuses; refusing them also keeps cycles out.
        if (v.as_dict().is_namespace)
            break;
        write_dict(v.as_dict(), level);
        return;
    default:
        break;
    }
    fail("Object of type " + v.type_name() + " is not JSON serializable");
}

} // namespace

std::string to_json(const value& v, int indent, const std::string& item_sep, const std::string& key_sep,
                    bool sort_keys) {
    json_writer w{indent, item_sep, key_sep, sort_keys, false, {}};
    w.write(v, 0);
    return std::move(w.out);
}

/// tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False), as transformers defines it.
value tojson_filter(const value& input, const call_args& args) {
    int indent = -1;
    if (const value* i = args.get("indent", 1); i && !i->is_none()) {
        std::int64_t n = i->as_int();
        check_growth(n > 0 ? static_cast<std::uint64_t>(n) : 0);
        indent = static_cast<int>(n < 0 ? 0 : n); // Python: a negative indent is no indent, with newlines
    }
    std::string item_sep = indent >= 0 ? "," : ", ";
    std::string key_sep = ": ";
    if (const value* s = args.get("separators", 2); s && s->is_list() && s->as_list().size() == 2) {
        item_sep = to_str(s->as_list()[0]);
        key_sep = to_str(s->as_list()[1]);
    }
    const value* sort = args.get("sort_keys", 3);
    const value* ascii = args.get("ensure_ascii", 0);
    json_writer w{indent, item_sep, key_sep, sort && sort->truthy(), ascii && ascii->truthy(), {}};
    w.write(input, 0);
    return value(std::move(w.out));
}

} // namespace sluice::chat
