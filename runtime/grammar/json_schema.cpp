// json_schema_to_gbnf: one generated rule per schema node over a fixed prelude of JSON rules.
#include "runtime/grammar/json_schema.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <optional>

namespace sluice::grammar {
namespace {

namespace json = boost::json;

// The JSON building blocks every generated grammar shares.
constexpr std::string_view prelude = R"(ws ::= ( " " | "\n" [ ]{0,20} )?
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
string ::= "\"" char* "\""
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( member ( "," ws member )* ws )? "}"
member ::= string ":" ws value
array ::= "[" ws ( value ( "," ws value )* ws )? "]"
)";

constexpr std::uint64_t max_bound = 4096; // the GBNF parser's repetition limit
constexpr std::size_t max_depth = 64;

constexpr std::array supported = {
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
    "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "minLength", "maxLength",
    "format", "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
    "readOnly", "writeOnly", "strict",
};

/// A GBNF string literal matching exactly `text`.
std::string gbnf_literal(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            static constexpr char hex[] = "0123456789ABCDEF";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string pointer_token(std::string_view key) {
    std::string out;
    for (const char c : key) {
        out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    }
    return out;
}

class schema_compiler {
public:
    schema_compiler(const json::value& root, std::string_view root_name) : root_(root), root_name_(root_name) {}

    result<std::string> run() {
        auto top = compile(root_, "#", 0);
        if (!top) {
            return top.error();
        }
        std::string out(prelude);
        out += std::string(root_name_) + " ::= " + *top + "\n";
        for (const auto& [name, body] : rules_) {
            out += name + " ::= " + body + "\n";
        }
        return out;
    }

private:
    using expr = result<std::string>;

    static error fail(std::string message) { return make_error(std::errc::invalid_argument, std::move(message)); }

    std::string add_rule(std::string body) {
        std::string name = "s" + std::to_string(rules_.size() + refs_.size());
        rules_.emplace_back(name, std::move(body));
        return name;
    }

    expr compile(const json::value& s, const std::string& ptr, std::size_t depth);
    expr compile_by_type(const json::object& o, const std::string& ptr, std::size_t depth);
    expr compile_typed(std::string_view type, const json::object& s, const std::string& ptr, std::size_t depth);
    expr compile_object(const json::object& s, const std::string& ptr, std::size_t depth);
    expr compile_array(const json::object& s, const std::string& ptr, std::size_t depth);
    expr compile_string(const json::object& s, const std::string& ptr);
    expr compile_ref(const json::value& ref, const std::string& ptr, std::size_t depth);
    expr compile_alternatives(const json::value& list, const std::string& ptr, std::size_t depth);
    expr compile_all_of(const json::value& list, const std::string& ptr, std::size_t depth);
    result<std::optional<std::uint64_t>> bound(const json::object& s, std::string_view key, const std::string& ptr);

    const json::value& root_;
    std::string_view root_name_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::map<std::string, std::string> refs_; ///< $ref target -> its rule
};

result<std::optional<std::uint64_t>> schema_compiler::bound(const json::object& s, std::string_view key,
                                                             const std::string& ptr) {
    const auto* v = s.if_contains(key);
    if (v == nullptr) {
        return std::optional<std::uint64_t>{};
    }
    std::uint64_t n = 0;
    if (v->is_uint64()) {
        n = v->as_uint64();
    } else if (v->is_int64() && v->as_int64() >= 0) {
        n = static_cast<std::uint64_t>(v->as_int64());
    } else {
        return fail("'" + std::string(key) + "' at " + ptr + " must be a non-negative integer");
    }
    if (n > max_bound) {
        return fail("'" + std::string(key) + "' at " + ptr + " above " + std::to_string(max_bound) +
                    " is not supported");
    }
    return std::optional<std::uint64_t>(n);
}

schema_compiler::expr schema_compiler::compile(const json::value& s, const std::string& ptr, std::size_t depth) {
    if (depth > max_depth) {
        return fail("the schema is nested deeper than " + std::to_string(max_depth) + " at " + ptr);
    }
    if (s.is_bool()) {
        if (s.as_bool()) {
            return std::string("value");
        }
        return fail("the schema at " + ptr + " is false: no value matches it");
    }
    if (!s.is_object()) {
        return fail("the schema at " + ptr + " must be an object or a boolean");
    }
    const auto& o = s.as_object();
    for (const auto& kv : o) {
        if (std::find(supported.begin(), supported.end(), std::string_view(kv.key())) == supported.end()) {
            return fail("unsupported keyword '" + std::string(kv.key()) + "' at " + ptr);
        }
    }
    if (const auto* ref = o.if_contains("$ref")) {
        return compile_ref(*ref, ptr + "/$ref", depth);
    }
    if (const auto* c = o.if_contains("const")) {
        return gbnf_literal(json::serialize(*c));
    }
    if (const auto* e = o.if_contains("enum")) {
        if (!e->is_array() || e->as_array().empty()) {
            return fail("'enum' at " + ptr + " must be a non-empty array");
        }
        std::string body;
        for (const auto& v : e->as_array()) {
            body += (body.empty() ? "" : " | ") + gbnf_literal(json::serialize(v));
        }
        return add_rule(body);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        if (const auto* list = o.if_contains(key)) {
            return compile_alternatives(*list, ptr + "/" + key, depth);
        }
    }
    if (const auto* list = o.if_contains("allOf")) {
        return compile_all_of(*list, ptr + "/allOf", depth);
    }
    return compile_by_type(o, ptr, depth);
}

// `type` as given (a name or a list of names), or guessed from the keywords present; any value without either.
schema_compiler::expr schema_compiler::compile_by_type(const json::object& o, const std::string& ptr,
                                                       std::size_t depth) {
    const auto* type = o.if_contains("type");
    if (type == nullptr) {
        if (o.contains("properties") || o.contains("additionalProperties")) {
            return compile_object(o, ptr, depth);
        }
        if (o.contains("items") || o.contains("prefixItems")) {
            return compile_array(o, ptr, depth);
        }
        return std::string("value");
    }
    if (type->is_string()) {
        return compile_typed(type->as_string(), o, ptr, depth);
    }
    if (!type->is_array() || type->as_array().empty()) {
        return fail("'type' at " + ptr + " must be a string or a non-empty array of strings");
    }
    std::string body;
    for (const auto& t : type->as_array()) {
        if (!t.is_string()) {
            return fail("'type' at " + ptr + " must be a string or a non-empty array of strings");
        }
        auto one = compile_typed(t.as_string(), o, ptr, depth);
        if (!one) {
            return one;
        }
        body += (body.empty() ? "" : " | ") + *one;
    }
    return add_rule(body);
}

schema_compiler::expr schema_compiler::compile_typed(std::string_view type, const json::object& s,
                                                     const std::string& ptr, std::size_t depth) {
    if (type == "object") {
        return compile_object(s, ptr, depth);
    }
    if (type == "array") {
        return compile_array(s, ptr, depth);
    }
    if (type == "string") {
        return compile_string(s, ptr);
    }
    if (type == "number" || type == "integer" || type == "boolean" || type == "null") {
        return std::string(type);
    }
    return fail("unknown type '" + std::string(type) + "' at " + ptr + "/type");
}

schema_compiler::expr schema_compiler::compile_string(const json::object& s, const std::string& ptr) {
    auto lo = bound(s, "minLength", ptr);
    auto hi = bound(s, "maxLength", ptr);
    if (!lo || !hi) {
        return !lo ? lo.error() : hi.error();
    }
    if (!*lo && !*hi) {
        return std::string("string");
    }
    const auto min = lo->value_or(0);
    if (*hi && **hi < min) {
        return fail("'maxLength' at " + ptr + " is below minLength");
    }
    return add_rule("\"\\\"\" char{" + std::to_string(min) + "," + (*hi ? std::to_string(**hi) : "") + "} \"\\\"\"");
}

schema_compiler::expr schema_compiler::compile_ref(const json::value& ref, const std::string& ptr,
                                                   std::size_t depth) {
    if (!ref.is_string()) {
        return fail("'$ref' at " + ptr + " must be a string");
    }
    const std::string target(ref.as_string());
    if (auto it = refs_.find(target); it != refs_.end()) {
        return it->second;
    }
    const json::value* to = nullptr;
    std::string at = "#";
    if (target == "#") {
        to = &root_;
    } else {
        for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
            const std::string_view p(prefix);
            if (target.starts_with(p) && root_.is_object()) {
                const auto* defs = root_.as_object().if_contains(p.substr(2, p.size() - 3));
                const std::string name = target.substr(p.size());
                if (defs != nullptr && defs->is_object() && name.find('/') == std::string::npos) {
                    to = defs->as_object().if_contains(name);
                    at = std::string(p.substr(0, p.size() - 1)) + "/" + pointer_token(name);
                }
            }
        }
    }
    if (to == nullptr) {
        return fail("'$ref' at " + ptr + ": '" + target +
                    "' not found (supported: #, #/$defs/NAME, #/definitions/NAME)");
    }
    // The rule's name is known before its body, so recursive schemas refer back to it.
    std::string name = "ref" + std::to_string(refs_.size() + rules_.size());
    refs_.emplace(target, name);
    auto body = compile(*to, at, depth + 1);
    if (!body) {
        return body;
    }
    rules_.emplace_back(name, *body);
    return name;
}

schema_compiler::expr schema_compiler::compile_alternatives(const json::value& list, const std::string& ptr,
                                                            std::size_t depth) {
    if (!list.is_array() || list.as_array().empty()) {
        return fail("'" + ptr.substr(ptr.rfind('/') + 1) + "' at " + ptr.substr(0, ptr.rfind('/')) +
                    " must be a non-empty array");
    }
    std::string body;
    for (std::size_t i = 0; i < list.as_array().size(); ++i) {
        auto one = compile(list.as_array()[i], ptr + "/" + std::to_string(i), depth + 1);
        if (!one) {
            return one;
        }
        body += (body.empty() ? "" : " | ") + *one;
    }
    return add_rule(body);
}

// allOf of object schemas: their properties and required lists merged into one object schema.
schema_compiler::expr schema_compiler::compile_all_of(const json::value& list, const std::string& ptr,
                                                      std::size_t depth) {
    if (!list.is_array() || list.as_array().empty()) {
        return fail("'allOf' at " + ptr.substr(0, ptr.rfind('/')) + " must be a non-empty array");
    }
    json::object merged{{"type", "object"}};
    json::object properties;
    json::array required;
    for (std::size_t i = 0; i < list.as_array().size(); ++i) {
        const auto& part = list.as_array()[i];
        const auto* o = part.if_object();
        const auto* t = o != nullptr ? o->if_contains("type") : nullptr;
        const bool object_like = o != nullptr && (t == nullptr || (t->is_string() && t->as_string() == "object"));
        if (!object_like || o->contains("$ref") || o->contains("anyOf") || o->contains("oneOf") ||
            o->contains("allOf")) {
            return fail("unsupported keyword 'allOf' at " + ptr.substr(0, ptr.rfind('/')) +
                        ": only object schemas with properties can be combined");
        }
        if (const auto* p = o->if_contains("properties"); p != nullptr && p->is_object()) {
            for (const auto& kv : p->as_object()) {
                properties[kv.key()] = kv.value();
            }
        }
        if (const auto* r = o->if_contains("required"); r != nullptr && r->is_array()) {
            required.insert(required.end(), r->as_array().begin(), r->as_array().end());
        }
    }
    merged["properties"] = std::move(properties);
    merged["required"] = std::move(required);
    return compile_object(merged, ptr, depth);
}

// Properties in the schema's order; optional ones may be left out. F_i: the members from i on when none was
// written yet; R_i: the same after at least one (each member then starts with a comma).
schema_compiler::expr schema_compiler::compile_object(const json::object& s, const std::string& ptr,
                                                      std::size_t depth) {
    const auto* props = s.if_contains("properties");
    const auto* extra = s.if_contains("additionalProperties");
    if (props != nullptr && !props->is_object()) {
        return fail("'properties' at " + ptr + " must be an object");
    }
    const bool extra_schema = extra != nullptr && extra->is_object();
    if (props == nullptr && (extra == nullptr || (extra->is_bool() && extra->as_bool()))) {
        return std::string("object");
    }
    std::vector<std::string> required;
    if (const auto* r = s.if_contains("required")) {
        if (!r->is_array()) {
            return fail("'required' at " + ptr + " must be an array of strings");
        }
        for (const auto& name : r->as_array()) {
            if (!name.is_string()) {
                return fail("'required' at " + ptr + " must be an array of strings");
            }
            required.emplace_back(name.as_string());
        }
    }
    std::vector<std::pair<std::string, bool>> members; // GBNF of "key": value, and whether it is required
    if (props != nullptr) {
        for (const auto& kv : props->as_object()) {
            auto v = compile(kv.value(), ptr + "/properties/" + pointer_token(kv.key()), depth + 1);
            if (!v) {
                return v;
            }
            const bool req = std::find(required.begin(), required.end(), kv.key()) != required.end();
            members.emplace_back(gbnf_literal(json::serialize(json::string(kv.key()))) + " \":\" ws " + *v,
                                 req);
        }
    }
    std::string tail_first = "\"\"";
    std::string tail_rest = "\"\"";
    if (extra_schema) {
        auto v = compile(*extra, ptr + "/additionalProperties", depth + 1);
        if (!v) {
            return v;
        }
        const std::string member = add_rule("string \":\" ws " + *v);
        tail_first = "( " + member + " ( \",\" ws " + member + " )* )?";
        tail_rest = "( \",\" ws " + member + " )*";
    }
    std::string first = add_rule(tail_first);
    std::string rest = add_rule(tail_rest);
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
        const auto& [member, req] = *it;
        std::string f = member + " " + rest;
        std::string r = "\",\" ws " + member + " " + rest;
        if (!req) {
            f += " | " + first;
            r += " | " + rest;
        }
        first = add_rule(f);
        rest = add_rule(r);
    }
    return add_rule("\"{\" ws " + first + " ws \"}\"");
}

schema_compiler::expr schema_compiler::compile_array(const json::object& s, const std::string& ptr,
                                                     std::size_t depth) {
    auto lo = bound(s, "minItems", ptr);
    auto hi = bound(s, "maxItems", ptr);
    if (!lo || !hi) {
        return !lo ? lo.error() : hi.error();
    }
    const std::uint64_t min = lo->value_or(0);
    if (*hi && **hi < min) {
        return fail("'maxItems' at " + ptr + " is below minItems");
    }
    std::vector<std::string> prefix;
    if (const auto* p = s.if_contains("prefixItems")) {
        if (!p->is_array()) {
            return fail("'prefixItems' at " + ptr + " must be an array");
        }
        for (std::size_t i = 0; i < p->as_array().size(); ++i) {
            auto v = compile(p->as_array()[i], ptr + "/prefixItems/" + std::to_string(i), depth + 1);
            if (!v) {
                return v;
            }
            prefix.push_back(*v);
        }
    }
    // Items past the prefix: the `items` schema; none when `items` is false, or absent after a prefix.
    std::optional<std::string> item;
    const auto* items = s.if_contains("items");
    if (items != nullptr && !(items->is_bool() && !items->as_bool())) {
        auto v = compile(*items, ptr + "/items", depth + 1);
        if (!v) {
            return v;
        }
        item = *v;
    } else if (items == nullptr && prefix.empty()) {
        item = "value";
    }
    if (*hi && prefix.size() > **hi) {
        return fail("'maxItems' at " + ptr + " is below the number of prefixItems");
    }
    std::string body;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        body += (i == 0 ? "" : " \",\" ws ") + prefix[i];
    }
    if (item) {
        const std::uint64_t k = prefix.size();
        const std::uint64_t more_min = min > k ? min - k : 0;
        const std::string more_max = *hi ? std::to_string(**hi - k) : "";
        if (*hi && **hi == k) {
            // nothing past the prefix
        } else if (k > 0) {
            body += " ( \",\" ws " + *item + " ){" + std::to_string(more_min) + "," + more_max + "}";
        } else {
            const std::string later_max = *hi ? std::to_string(**hi - 1) : "";
            const std::string list = *item + " ( \",\" ws " + *item + " ){" +
                                     std::to_string(more_min > 0 ? more_min - 1 : 0) + "," + later_max + "}";
            body = more_min > 0 ? list : "( " + list + " )?";
        }
    }
    return add_rule("\"[\" ws " + (body.empty() ? std::string("\"\"") : body + " ws") + " \"]\"");
}

} // namespace

std::string json_object_gbnf() { return std::string(prelude) + "root ::= object\n"; }

result<std::string> json_schema_to_gbnf(const boost::json::value& schema, std::string_view root_name) {
    return schema_compiler(schema, root_name).run();
}

result<std::shared_ptr<const grammar>> compile_json_schema(const boost::json::value& schema) {
    auto text = json_schema_to_gbnf(schema);
    if (!text) {
        return text.error();
    }
    auto g = parse_gbnf(*text);
    if (!g && g.error().message.find("left recursion") != std::string::npos) {
        return make_error(std::errc::invalid_argument,
                          "a '$ref' cycle with no JSON text in between (" + g.error().message + ")");
    }
    return g;
}

} // namespace sluice::grammar
