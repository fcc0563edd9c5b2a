// Structured output over real sockets against `sluice serve` on the tiny model: response_format json_schema and
// json_object answers parse and validate, whole and streamed, on chat and completions; llama-server's grammar
// field restricts the text; bad schemas and grammars are 400s naming the field and the keyword; tool_choice
// "required" or naming a function forces a Hermes / Qwen3 call under Qwen3's own chat template (the other formats:
// forced_tool_calls_test.cpp).
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

const std::string question = R"("messages":[{"role":"user","content":"What is the capital of Peru?"}])";

const std::string city_schema = R"({"type":"object","properties":{"city":{"type":"string","maxLength":16},
    "population":{"type":"integer"},"capital":{"type":"boolean"},"size":{"enum":["small","large"]}},
    "required":["city","population","capital","size"],"additionalProperties":false})";

std::string json_schema_format(const std::string& schema) {
    return R"("response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)" + schema +
           "}}";
}

/// The text of a streamed answer: the concatenated delta contents (chat) or texts (completions).
std::string streamed_text(const std::string& body, std::string& finish) {
    std::string text;
    std::size_t pos = 0;
    while ((pos = body.find("data: {", pos)) != std::string::npos) {
        const auto end = body.find("\n\n", pos);
        const auto chunk = json::parse(body.substr(pos + 6, end - pos - 6)).as_object();
        pos = end;
        for (const auto& c : chunk.at("choices").as_array()) {
            const auto& o = c.as_object();
            if (const auto* d = o.if_contains("delta"); d && d->as_object().contains("content") &&
                                                        d->as_object().at("content").is_string()) {
                text += std::string(d->as_object().at("content").as_string());
            }
            if (const auto* t = o.if_contains("text")) {
                text += std::string(t->as_string());
            }
            if (o.at("finish_reason").is_string()) {
                finish = std::string(o.at("finish_reason").as_string());
            }
        }
    }
    return text;
}

void expect_valid_city(const std::string& text) {
    boost::system::error_code ec;
    const auto doc = json::parse(text, ec);
    ASSERT_FALSE(ec) << text;
    ASSERT_TRUE(doc.is_object()) << text;
    const auto& o = doc.as_object();
    EXPECT_EQ(o.size(), 4U) << text;
    EXPECT_TRUE(o.at("city").is_string()) << text;
    EXPECT_TRUE(o.at("population").is_int64() || o.at("population").is_uint64()) << text;
    EXPECT_TRUE(o.at("capital").is_bool()) << text;
    EXPECT_TRUE(o.at("size") == "small" || o.at("size") == "large") << text;
}

TEST(structured_output, json_schema_answers_parse_and_validate_whole_and_streamed) {
    server_process server;
    for (const char* temperature : {"0", "1"}) {
        const std::string body = "{" + question + "," + json_schema_format(city_schema) +
                                 R"(,"max_tokens":400,"seed":11,"temperature":)" + temperature;
        const auto whole = post_json(server.port(), "/v1/chat/completions", body + "}");
        ASSERT_EQ(whole.status, 200) << whole.body;
        const auto doc = body_json(whole);
        const auto& choice = doc.at("choices").at(0);
        expect_valid_city(std::string(choice.at("message").at("content").as_string()));
        EXPECT_EQ(choice.at("finish_reason"), "stop") << whole.body;

        const auto streamed = post_json(server.port(), "/v1/chat/completions", body + R"(,"stream":true})");
        ASSERT_EQ(streamed.status, 200) << streamed.body;
        std::string finish;
        const auto text = streamed_text(streamed.body, finish);
        expect_valid_city(text);
        EXPECT_EQ(finish, "stop");
        EXPECT_EQ(text, std::string(choice.at("message").at("content").as_string())) << "same seed, same answer";
    }
}

TEST(structured_output, json_object_answers_are_objects_on_chat_and_completions) {
    server_process server;
    const auto chat = post_json(server.port(), "/v1/chat/completions",
                                "{" + question + R"(,"response_format":{"type":"json_object"},"max_tokens":300,
                                "temperature":0.7,"seed":3})");
    ASSERT_EQ(chat.status, 200) << chat.body;
    const auto doc = body_json(chat);
    const auto& choice = doc.at("choices").at(0);
    if (choice.at("finish_reason") == "stop") {
        boost::system::error_code ec;
        const auto content = json::parse(choice.at("message").at("content").as_string(), ec);
        ASSERT_FALSE(ec) << chat.body;
        EXPECT_TRUE(content.is_object()) << chat.body;
    } else {
        // Cut by max_tokens: still the start of an object.
        EXPECT_EQ(choice.at("message").at("content").as_string().front(), '{') << chat.body;
    }
    const auto comp = post_json(server.port(), "/v1/completions",
                                R"({"prompt":"And it came to pass","max_tokens":400,"seed":4,)" +
                                    json_schema_format(city_schema) + "}");
    ASSERT_EQ(comp.status, 200) << comp.body;
    expect_valid_city(std::string(body_json(comp).at("choices").at(0).at("text").as_string()));
}

TEST(structured_output, grammar_field_restricts_the_text_whole_and_streamed) {
    server_process server;
    const std::string grammar = R"("grammar":"root ::= (\"yes\" | \"no\") \".\"")";
    for (int seed = 1; seed <= 3; ++seed) {
        const std::string chat =
            "{" + question + "," + grammar + R"(,"temperature":1,"seed":)" + std::to_string(seed);
        const auto whole = post_json(server.port(), "/v1/chat/completions", chat + "}");
        ASSERT_EQ(whole.status, 200) << whole.body;
        const std::string content(body_json(whole).at("choices").at(0).at("message").at("content").as_string());
        EXPECT_TRUE(content == "yes." || content == "no.") << content;
        const auto streamed = post_json(server.port(), "/v1/chat/completions", chat + R"(,"stream":true})");
        std::string finish;
        EXPECT_EQ(streamed_text(streamed.body, finish), content);
        EXPECT_EQ(finish, "stop");
    }
    const auto comp = post_json(server.port(), "/v1/completions",
                                R"({"prompt":"What is 478 + 356?","max_tokens":20,"grammar":"root ::= [0-9]{1,4}"})");
    ASSERT_EQ(comp.status, 200) << comp.body;
    const std::string digits(body_json(comp).at("choices").at(0).at("text").as_string());
    ASSERT_FALSE(digits.empty());
    EXPECT_EQ(digits.find_first_not_of("0123456789"), std::string::npos) << digits;
}

void expect_400(const server_process& server, const std::string& target, const std::string& body,
                const std::string& param, const std::string& needle) {
    const auto r = post_json(server.port(), target, body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(openai_error_problem(r), "") << r.body;
    const auto v = body_json(r);
    ASSERT_TRUE(v.is_object()) << r.body;
    EXPECT_EQ(v.at("error").at("param"), json::value(param)) << r.body;
    EXPECT_NE(std::string(v.at("error").at("message").as_string()).find(needle), std::string::npos) << r.body;
}

TEST(structured_output, bad_schemas_and_grammars_are_400s_naming_the_field) {
    server_process server;
    const std::string chat = "/v1/chat/completions";
    expect_400(server, chat,
               "{" + question + "," +
                   json_schema_format(R"({"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}})") +
                   "}",
               "response_format.json_schema.schema", "unsupported keyword 'pattern' at #/properties/x");
    expect_400(server, chat,
               "{" + question +
                   R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"string"}}}})",
               "response_format.json_schema.name", "name");
    expect_400(server, chat, "{" + question + R"(,"response_format":{"type":"json_schema"}})",
               "response_format.json_schema", "json_schema");
    expect_400(server, chat,
               "{" + question + "," +
                   json_schema_format(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})") + "}",
               "response_format.json_schema.schema", "'$ref' cycle");
    expect_400(server, chat, "{" + question + R"(,"grammar":"root ::= \"a\"\nfoo = 1"})", "grammar",
               "grammar: line 2, column 5");
    expect_400(server, "/v1/completions", R"({"prompt":"x","grammar":"root ::= missing"})", "grammar",
               "undefined rule 'missing'");
    expect_400(server, chat, "{" + question + R"(,"grammar":7})", "grammar", "string");
    expect_400(server, chat,
               "{" + question + R"(,"grammar":"root ::= \"a\"","response_format":{"type":"json_object"}})",
               "grammar", "cannot be combined");
    // <[id]> must name a control token of the served model (whose vocabulary has 4096 tokens, 0 a text token).
    expect_400(server, chat, "{" + question + R"(,"grammar":"root ::= <[9999]>"})", "grammar",
               "outside this model's");
    expect_400(server, "/v1/completions", R"({"prompt":"x","grammar":"root ::= \"a\" <[0]>","stream":true})",
               "grammar", "not a control token");
    const std::string deep = "root ::= " + std::string(30000, '(') + "\\\"a\\\"" + std::string(30000, ')');
    expect_400(server, chat, "{" + question + R"(,"grammar":")" + deep + "\"}", "grammar", "nested deeper");
    // The server is still healthy after all of it.
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

/// The tiny model with a real chat template from the shared fixtures.
std::filesystem::path model_with_fixture_template(const std::string& file) {
    std::ifstream in(std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures/chat-templates" / file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_FALSE(text.str().empty()) << file;
    return tiny_model_with_template(file.substr(0, file.find('.')), text.str());
}

const std::string weather_tools = R"("tools":[
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
        "city":{"type":"string","maxLength":12},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city","unit"]}}},
    {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{
        "zone":{"$ref":"#/$defs/zone"}},"required":["zone"],"$defs":{"zone":{"enum":["UTC","CET"]}}}}}])";

void expect_valid_call(const json::value& call, const std::string& expected_name) {
    const auto& fn = call.at("function");
    const std::string name(fn.at("name").as_string());
    if (!expected_name.empty()) {
        EXPECT_EQ(name, expected_name);
    }
    const auto args = json::parse(fn.at("arguments").as_string());
    if (name == "get_weather") {
        EXPECT_TRUE(args.at("city").is_string()) << args;
        EXPECT_TRUE(args.at("unit") == "celsius" || args.at("unit") == "fahrenheit") << args;
    } else {
        ASSERT_EQ(name, "get_time");
        EXPECT_TRUE(args.at("zone") == "UTC" || args.at("zone") == "CET") << args;
    }
}

TEST(structured_output, tool_choice_required_and_named_force_calls_in_the_qwen3_format) {
    server_process server({}, model_with_fixture_template("Qwen-Qwen3-0.6B.jinja"));
    const std::string ask = R"({"messages":[{"role":"user","content":"Weather in Lima?"}],)" + weather_tools +
                            R"(,"max_tokens":300,"temperature":1,)";
    for (int seed = 1; seed <= 3; ++seed) {
        const auto r = post_json(server.port(), "/v1/chat/completions",
                                 ask + R"("tool_choice":"required","parallel_tool_calls":false,"seed":)" +
                                     std::to_string(seed) + "}");
        ASSERT_EQ(r.status, 200) << r.body;
        const auto doc = body_json(r);
        const auto& choice = doc.at("choices").at(0);
        EXPECT_EQ(choice.at("finish_reason"), "tool_calls") << r.body;
        const auto& calls = choice.at("message").at("tool_calls").as_array();
        ASSERT_EQ(calls.size(), 1U) << r.body;
        expect_valid_call(calls[0], "");
    }
    const std::string named = ask + R"("seed":5,"tool_choice":{"type":"function","function":{"name":"get_time"}})";
    const auto whole = post_json(server.port(), "/v1/chat/completions", named + "}");
    ASSERT_EQ(whole.status, 200) << whole.body;
    const auto doc = body_json(whole);
    const auto& calls = doc.at("choices").at(0).at("message").at("tool_calls").as_array();
    ASSERT_GE(calls.size(), 1U) << whole.body;
    for (const auto& c : calls) {
        expect_valid_call(c, "get_time");
    }
    const auto streamed = post_json(server.port(), "/v1/chat/completions", named + R"(,"stream":true})");
    ASSERT_EQ(streamed.status, 200);
    EXPECT_NE(streamed.body.find(R"("name":"get_time")"), std::string::npos) << streamed.body;
    EXPECT_NE(streamed.body.find(R"("finish_reason":"tool_calls")"), std::string::npos) << streamed.body;
}

TEST(structured_output, tool_choice_that_cannot_be_enforced_is_a_400) {
    server_process qwen({}, model_with_fixture_template("Qwen-Qwen3-0.6B.jinja"));
    const std::string ask = R"({"messages":[{"role":"user","content":"Weather?"}],)" + weather_tools;
    expect_400(qwen, "/v1/chat/completions",
               ask + R"(,"tool_choice":{"type":"function","function":{"name":"get_moon"}}})",
               "tool_choice.function.name", "not among the tools");
    expect_400(qwen, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}],"tool_choice":"required"})",
               "tool_choice", "no tools");
    expect_400(qwen, "/v1/chat/completions",
               ask + R"(,"tool_choice":"required","response_format":{"type":"json_object"}})", "tool_choice",
               "cannot be combined");
    expect_400(qwen, "/v1/chat/completions",
               R"({"messages":[{"role":"user","content":"Hi"}],"tool_choice":"required","tools":[{"type":"function",)"
               R"("function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string","pattern":"a"}}}}}]})",
               "tools[0].function.parameters", "unsupported keyword 'pattern' at #/properties/x");
    // Qwen3.5 writes <function=...> XML calls, parameter by parameter: parameters must be an object schema.
    server_process coder({}, model_with_fixture_template("Qwen3.5-4B.jinja"));
    expect_400(coder, "/v1/chat/completions",
               R"({"messages":[{"role":"user","content":"Hi"}],"tool_choice":"required","tools":[{"type":"function",)"
               R"("function":{"name":"f","parameters":{"anyOf":[{"type":"object"}]}}}]})",
               "tools[0].function.parameters", "object schema");
}

} // namespace
} // namespace sluice::test
