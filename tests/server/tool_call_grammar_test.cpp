// The forced-call grammars of every tool-call format against calls written in that format (the texts the output
// parser reads): a valid call is accepted and parses back to the same name and arguments; a wrong name, a wrong
// argument type, a missing required argument and a second call where one is allowed are refused; marker texts
// that are control tokens are accepted only as the token.
#include "server/tool_call_grammar.hpp"

#include "runtime/chat/output_parser.hpp"
#include "runtime/grammar/matcher.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace sluice::server {
namespace {

namespace json = boost::json;
using chat::tool_format;

const json::array tools = json::parse(R"([
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
        "city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
        "required":["city","days"]}}},
    {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{
        "zone":{"enum":["UTC","CET"]}},"required":["zone"]}}}])")
                              .as_array();

std::shared_ptr<const grammar::grammar> compile(const forced_call_syntax& s, bool parallel,
                                                const std::optional<std::string>& only = std::string()) {
    auto text = forced_call_grammar(tools, only, parallel, s);
    EXPECT_TRUE(text) << (text ? "" : text.error().message);
    if (!text) {
        return nullptr;
    }
    auto g = grammar::parse_gbnf(*text);
    EXPECT_TRUE(g) << (g ? "" : g.error().message) << "\n" << *text;
    return g ? *g : nullptr;
}

bool matches(const std::shared_ptr<const grammar::grammar>& g, std::string_view text) {
    if (!g) {
        return false;
    }
    grammar::matcher m(g);
    return m.accept(text) && m.is_complete();
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
        s.replace(at, from.size(), to);
    }
    return s;
}

struct format_case {
    const char* label;
    forced_call_syntax syntax;
    std::string call;      ///< get_weather(city "Lima", days 3)
    std::string days_text; ///< how `days` 3 is written in `call`
    std::string bad_days;  ///< the same with a string
    bool parallel_calls;   ///< the format writes several calls
};

std::vector<format_case> cases() {
    const std::string json_args = R"({"city": "Lima", "days": 3})";
    forced_call_syntax deepseek31{tool_format::deepseek_v3};
    deepseek31.fenced_json = false;
    forced_call_syntax devstral{tool_format::mistral};
    devstral.args_marker = true;
    return {
        {"hermes",
         {tool_format::hermes},
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + json_args + "}\n</tool_call>",
         "3",
         "\"3\"",
         true},
        {"llama3",
         {tool_format::llama3},
         "{\"name\": \"get_weather\", \"parameters\": " + json_args + "}",
         "3",
         "\"3\"",
         false},
        {"mistral",
         {tool_format::mistral},
         "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + json_args + "}]",
         "3",
         "\"3\"",
         false},
        {"mistral [ARGS]", devstral, "[TOOL_CALLS]get_weather[ARGS]" + json_args, "3", "\"3\"", true},
        {"deepseek_v3",
         {tool_format::deepseek_v3},
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + json_args +
             "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
         "3",
         "\"3\"",
         false},
        {"deepseek_v3.1", deepseek31,
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + json_args +
             "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
         "3", "\"3\"", false},
        {"kimi_k2",
         {tool_format::kimi_k2},
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" +
             json_args + "<|tool_call_end|><|tool_calls_section_end|>",
         "3",
         "\"3\"",
         false},
        {"harmony",
         {tool_format::harmony},
         " to=functions.get_weather<|channel|>commentary json<|message|>" + json_args + "<|call|>",
         "3",
         "\"3\"",
         false},
        {"qwen3_coder",
         {tool_format::qwen3_coder},
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n<parameter=days>\n3\n"
         "</parameter>\n</function>\n</tool_call>",
         "\n3\n",
         "\nthree\n",
         true},
        {"glm45",
         {tool_format::glm45},
         "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Lima</arg_value><arg_key>days</arg_key>"
         "<arg_value>3</arg_value></tool_call>",
         ">3<",
         ">three<",
         true},
    };
}

TEST(tool_call_grammar, every_format_accepts_its_own_call_and_the_parser_reads_it_back) {
    for (const auto& c : cases()) {
        SCOPED_TRACE(c.label);
        const auto g = compile(c.syntax, true);
        EXPECT_TRUE(matches(g, c.call)) << c.call;
        EXPECT_TRUE(matches(compile(c.syntax, false, std::string("get_weather")), c.call));
        chat::output_syntax syntax;
        syntax.tools = c.syntax.format;
        const auto out = chat::parse_output(c.call, syntax, tools);
        ASSERT_EQ(out.calls.size(), 1U) << out.content;
        EXPECT_EQ(out.calls[0].name, "get_weather");
        EXPECT_EQ(json::parse(out.calls[0].arguments), json::parse(R"({"city":"Lima","days":3})"));
    }
}

TEST(tool_call_grammar, a_wrong_name_a_wrong_type_or_a_missing_argument_is_refused) {
    for (const auto& c : cases()) {
        SCOPED_TRACE(c.label);
        const auto g = compile(c.syntax, true);
        EXPECT_FALSE(matches(g, replace_all(c.call, "get_weather", "get_moon")));
        EXPECT_FALSE(matches(g, replace_all(c.call, c.days_text, c.bad_days)));
        // The named function only: the other tool's name is refused.
        EXPECT_FALSE(matches(compile(c.syntax, true, std::string("get_time")), c.call));
        // Without the required `days`.
        std::string no_days = replace_all(c.call, R"(, "days": 3)", "");
        no_days = replace_all(no_days, "<parameter=days>\n3\n</parameter>\n", "");
        no_days = replace_all(no_days, "<arg_key>days</arg_key><arg_value>3</arg_value>", "");
        ASSERT_NE(no_days, c.call);
        EXPECT_FALSE(matches(g, no_days)) << no_days;
    }
}

TEST(tool_call_grammar, several_calls_only_with_parallel_tool_calls) {
    const std::map<std::string, std::string> joined{
        {"hermes", "\n"}, {"mistral [ARGS]", ""}, {"qwen3_coder", "\n"}, {"glm45", "\n"}};
    for (const auto& c : cases()) {
        SCOPED_TRACE(c.label);
        if (!c.parallel_calls) {
            continue;
        }
        const std::string two = c.call + joined.at(c.label) + c.call;
        EXPECT_TRUE(matches(compile(c.syntax, true), two));
        EXPECT_FALSE(matches(compile(c.syntax, false), two));
        chat::output_syntax syntax;
        syntax.tools = c.syntax.format;
        EXPECT_EQ(chat::parse_output(two, syntax, tools).calls.size(), 2U);
    }
    // Formats with one section of calls: two inside it.
    const std::string args = R"({"zone": "UTC"})";
    const std::string kimi_call =
        "<|tool_call_begin|>functions.get_time:0<|tool_call_argument_begin|>" + args + "<|tool_call_end|>";
    const std::string kimi = "<|tool_calls_section_begin|>" + kimi_call + kimi_call + "<|tool_calls_section_end|>";
    EXPECT_TRUE(matches(compile({tool_format::kimi_k2}, true), kimi));
    EXPECT_FALSE(matches(compile({tool_format::kimi_k2}, false), kimi));
    const std::string ds_call =
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n" + args + "\n```<｜tool▁call▁end｜>";
    const std::string ds = "<｜tool▁calls▁begin｜>" + ds_call + "\n" + ds_call + "<｜tool▁calls▁end｜>";
    EXPECT_TRUE(matches(compile({tool_format::deepseek_v3}, true), ds));
    EXPECT_FALSE(matches(compile({tool_format::deepseek_v3}, false), ds));
    const std::string mistral = "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": " + args +
                                "}, {\"name\": \"get_time\", \"arguments\": " + args + "}]";
    EXPECT_TRUE(matches(compile({tool_format::mistral}, true), mistral));
    EXPECT_FALSE(matches(compile({tool_format::mistral}, false), mistral));
}

TEST(tool_call_grammar, xml_values_follow_the_property_schema) {
    const forced_call_syntax coder{tool_format::qwen3_coder};
    const auto g = compile(coder, false);
    const std::string head = "<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n"
                             "<parameter=days>\n3\n</parameter>\n";
    const std::string tail = "</function>\n</tool_call>";
    EXPECT_TRUE(matches(g, head + "<parameter=unit>\ncelsius\n</parameter>\n" + tail));
    EXPECT_FALSE(matches(g, head + "<parameter=unit>\nkelvin\n</parameter>\n" + tail));
    EXPECT_FALSE(matches(g, head + "<parameter=wind>\n3\n</parameter>\n" + tail)); // not a property
    // An untyped string enum is written raw and read back as the string.
    const std::string zone = "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n" + tail;
    EXPECT_TRUE(matches(g, zone));
    chat::output_syntax syntax;
    syntax.tools = tool_format::qwen3_coder;
    const auto out = chat::parse_output(zone, syntax, tools);
    ASSERT_EQ(out.calls.size(), 1U);
    EXPECT_EQ(json::parse(out.calls[0].arguments), json::parse(R"({"zone":"CET"})"));
}

TEST(tool_call_grammar, markers_that_are_control_tokens_are_asked_for_as_the_token) {
    forced_call_syntax s{tool_format::kimi_k2};
    s.tokens = {{"<|tool_calls_section_begin|>", 7, false},
                {"<|tool_call_begin|>", 8, false},
                {"<|tool_call_argument_begin|>", 9, false},
                {"<|tool_call_end|>", 10, false},
                {"<|tool_calls_section_end|>", 11, false}};
    const auto g = compile(s, false);
    const auto token = [](int id) { return std::string{'\xFF', '\0', '\0', static_cast<char>(id)}; };
    const std::string args = R"({"zone": "UTC"})";
    EXPECT_TRUE(matches(g, token(7) + token(8) + "functions.get_time:0" + token(9) + args + token(10) + token(11)));
    EXPECT_FALSE(matches(g, "<|tool_calls_section_begin|>" + token(8) + "functions.get_time:0" + token(9) + args +
                                token(10) + token(11)));
    EXPECT_FALSE(matches(g, token(8) + token(8) + "functions.get_time:0" + token(9) + args + token(10) + token(11)));
    // A marker that ends generation (gpt-oss's <|call|>) is where the grammar ends.
    forced_call_syntax h{tool_format::harmony};
    h.tokens = {{"<|channel|>", 3, false}, {"<|message|>", 4, false}, {"<|call|>", 5, true}};
    EXPECT_TRUE(matches(compile(h, false), " to=functions.get_time" + token(3) + "commentary json" + token(4) + args));
}

TEST(tool_call_grammar, a_prompt_inside_reasoning_closes_it_first) {
    forced_call_syntax s{tool_format::qwen3_coder};
    s.starts_in_reasoning = true;
    const std::string call = "<tool_call>\n<function=get_time>\n<parameter=zone>\nUTC\n</parameter>\n"
                             "</function>\n</tool_call>";
    EXPECT_TRUE(matches(compile(s, false), "let me see</think>\n\n" + call));
    EXPECT_FALSE(matches(compile(s, false), call));
}

TEST(tool_call_grammar, each_tool_keeps_its_own_definitions_where_the_name_is_outside_the_json) {
    // Two tools define $defs/unit differently: each alternative has its own rules, so each takes only its own.
    const auto two = json::parse(R"([
        {"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{
            "u":{"$ref":"#/$defs/unit"}},"required":["u"],"$defs":{"unit":{"enum":["m","s"]}}}}},
        {"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{
            "u":{"$ref":"#/$defs/unit"}},"required":["u"],"$defs":{"unit":{"type":"integer"}}}}}])")
                         .as_array();
    for (const auto format : {tool_format::kimi_k2, tool_format::qwen3_coder}) {
        auto text = forced_call_grammar(two, std::string(), false, {format});
        ASSERT_TRUE(text) << text.error().message;
        auto g = grammar::parse_gbnf(*text);
        ASSERT_TRUE(g) << g.error().message << "\n" << *text;
        const auto call = [&](const char* name, const char* value) {
            if (format == tool_format::kimi_k2) {
                return "<|tool_calls_section_begin|><|tool_call_begin|>functions." + std::string(name) +
                       ":0<|tool_call_argument_begin|>{\"u\": " + value +
                       "}<|tool_call_end|><|tool_calls_section_end|>";
            }
            return "<tool_call>\n<function=" + std::string(name) + ">\n<parameter=u>\n" + value +
                   "\n</parameter>\n</function>\n</tool_call>";
        };
        // A $ref'd value is JSON in both (the XML parsers read a value of no declared type as JSON).
        EXPECT_TRUE(matches(*g, call("a", "\"m\""))) << *text;
        EXPECT_TRUE(matches(*g, call("b", "7")));
        EXPECT_FALSE(matches(*g, call("a", "7")));
        EXPECT_FALSE(matches(*g, call("b", "\"m\"")));
    }
    // Where the name is inside the JSON the definitions share one namespace: a conflict is a 400 naming it.
    auto hermes = forced_call_grammar(two, std::string(), false, {tool_format::hermes});
    ASSERT_FALSE(hermes);
    EXPECT_EQ(hermes.error().param, "tools[1].function.parameters");
}

TEST(tool_call_grammar, an_xml_format_tool_without_an_object_schema_is_a_400_naming_it) {
    const auto bad = json::parse(R"([{"type":"function","function":{"name":"f","parameters":true}}])").as_array();
    auto r = forced_call_grammar(bad, std::string(), true, {tool_format::glm45});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().param, "tools[0].function.parameters");
    auto none = forced_call_grammar(tools, std::string(), true, {tool_format::none});
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().param, "tool_choice");
}

} // namespace
} // namespace sluice::server
