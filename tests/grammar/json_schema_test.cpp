// json_schema_to_gbnf: generated grammars parse, accept documents the schema allows and refuse others;
// unsupported keywords and $ref left recursion are errors naming where.
#include "grammar_test_util.hpp"

#include "runtime/grammar/json_schema.hpp"

#include <boost/json/parse.hpp>

#include <string>

namespace sluice::grammar::test {
namespace {

std::shared_ptr<const grammar> schema(std::string_view text) {
    auto g = compile_json_schema(boost::json::parse(text));
    EXPECT_TRUE(g) << (g ? "" : g.error().message);
    return g ? *g : nullptr;
}

void expect_schema_error(std::string_view text, std::string_view needle) {
    auto g = compile_json_schema(boost::json::parse(text));
    ASSERT_FALSE(g) << text;
    EXPECT_NE(g.error().message.find(needle), std::string::npos) << g.error().message;
}

TEST(json_schema, object_with_required_and_optional_properties) {
    auto g = schema(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
        "tags":{"type":"array","items":{"type":"string"}}},"required":["name","tags"],"additionalProperties":false})");
    EXPECT_TRUE(matches(g, R"({"name":"Ann","age":41,"tags":[]})"));
    EXPECT_TRUE(matches(g, R"({"name":"Ann","tags":["a","b"]})"));
    EXPECT_TRUE(matches(g, "{\n  \"name\": \"B\\\"o\\u00e9\",\n  \"tags\": [ \"x\" ]\n}"));
    EXPECT_FALSE(matches(g, R"({"age":41,"tags":[]})"));          // name required
    EXPECT_FALSE(matches(g, R"({"name":"Ann","age":4.5,"tags":[]})")); // integer
    EXPECT_FALSE(matches(g, R"({"name":"Ann","tags":[],"x":1})"));     // no extra properties
    EXPECT_FALSE(matches(g, R"({"tags":[],"name":"Ann"})"));           // schema order
    EXPECT_FALSE(matches(g, R"({"name":"Ann","tags":[]},)"));
}

TEST(json_schema, whitespace_is_bounded) {
    auto g = schema(R"({"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]})");
    EXPECT_TRUE(matches(g, "{ \"a\": true }"));
    EXPECT_TRUE(matches(g, "{\n                    \"a\":true}"));
    EXPECT_FALSE(matches(g, "{  \"a\": true}"));
    EXPECT_FALSE(matches(g, "{\n\n\"a\": true}"));
    EXPECT_FALSE(matches(g, "{\"a\" : true}")); // nothing before a colon
    EXPECT_FALSE(is_prefix(g, "{\n" + std::string(21, ' ')));
}

TEST(json_schema, numbers_strings_enums_consts_and_type_arrays) {
    auto n = schema(R"({"type":"number"})");
    for (const char* ok : {"0", "-1.5", "3e10", "12.25E-3", "-0"}) {
        EXPECT_TRUE(matches(n, ok)) << ok;
    }
    for (const char* bad : {"01", "1.", ".5", "+1", "1e", "NaN"}) {
        EXPECT_FALSE(matches(n, bad)) << bad;
    }
    EXPECT_FALSE(is_prefix(n, std::string(17, '1'))); // digits are bounded
    auto s = schema(R"({"type":"string","minLength":2,"maxLength":3})");
    EXPECT_TRUE(matches(s, R"("ab")"));
    EXPECT_TRUE(matches(s, R"("a\nb")"));
    EXPECT_FALSE(matches(s, R"("a")"));
    EXPECT_FALSE(matches(s, R"("abcd")"));
    auto e = schema(R"({"enum":["red","green",3,null]})");
    EXPECT_TRUE(matches(e, R"("green")"));
    EXPECT_TRUE(matches(e, "null"));
    EXPECT_FALSE(matches(e, R"("blue")"));
    auto c = schema(R"({"const":{"k":[1,"x"]}})");
    EXPECT_TRUE(matches(c, R"({"k":[1,"x"]})"));
    auto t = schema(R"({"type":["string","null"]})");
    EXPECT_TRUE(matches(t, "null"));
    EXPECT_TRUE(matches(t, R"("x")"));
    EXPECT_FALSE(matches(t, "1"));
}

TEST(json_schema, arrays_with_bounds_and_prefix_items) {
    auto a = schema(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})");
    EXPECT_TRUE(matches(a, "[1]"));
    EXPECT_TRUE(matches(a, "[1, 2, 3]"));
    EXPECT_FALSE(matches(a, "[]"));
    EXPECT_FALSE(matches(a, "[1,2,3,4]"));
    auto p = schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}],"items":false})");
    EXPECT_TRUE(matches(p, R"(["a", true])"));
    EXPECT_FALSE(matches(p, R"(["a", true, 1])"));
    EXPECT_FALSE(matches(p, R"([true, "a"])"));
}

TEST(json_schema, any_of_all_of_and_refs) {
    auto g = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
        "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},
        "allOf":[{"properties":{"head":{"$ref":"#/$defs/node"}},"required":["head"]},
                 {"type":"object","properties":{"n":{"type":"integer"}}}]})");
    EXPECT_TRUE(matches(g, R"({"head":{"v":1,"next":{"v":2,"next":null}},"n":2})"));
    EXPECT_TRUE(matches(g, R"({"head":{"v":1,"next":null}})"));
    EXPECT_FALSE(matches(g, R"({"head":{"v":1}})"));
    auto d = schema(R"({"definitions":{"x":{"type":"boolean"}},"type":"array","items":{"$ref":"#/definitions/x"}})");
    EXPECT_TRUE(matches(d, "[true,false]"));
}

TEST(json_schema, additional_properties_schema_and_free_objects) {
    auto m = schema(R"({"type":"object","additionalProperties":{"type":"integer"}})");
    EXPECT_TRUE(matches(m, R"({"a":1,"b":2})"));
    EXPECT_FALSE(matches(m, R"({"a":"x"})"));
    auto any = schema(R"({"type":"object"})");
    EXPECT_TRUE(matches(any, R"({"a":[1,{"b":null}],"c":"d"})"));
    auto obj = parse_gbnf(json_object_gbnf());
    ASSERT_TRUE(obj);
    EXPECT_TRUE(matches(*obj, R"({"k": [true, 1.5, "s"]})"));
    EXPECT_FALSE(matches(*obj, "[1]"));
}

TEST(json_schema, unsupported_keywords_name_keyword_and_pointer) {
    expect_schema_error(R"({"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}})",
                        "unsupported keyword 'pattern' at #/properties/x");
    expect_schema_error(R"({"type":"integer","minimum":3})", "unsupported keyword 'minimum' at #");
    expect_schema_error(R"({"anyOf":[{"type":"string"},{"not":{}}]})", "'not' at #/anyOf/1");
    expect_schema_error(R"({"type":"strange"})", "unknown type 'strange'");
    expect_schema_error(R"({"$ref":"#/components/x"})", "not found");
    expect_schema_error(R"({"type":"array","maxItems":100000})", "'maxItems' at # above 4096");
    expect_schema_error(R"({"properties":{"a":false}})", "#/properties/a is false");
}

TEST(json_schema, ref_cycle_without_text_is_refused) {
    expect_schema_error(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},
        "$ref":"#/$defs/a"})", "'$ref' cycle");
}

} // namespace
} // namespace sluice::grammar::test
