// tool_choice "required" and a named function over real sockets against `sluice serve`, for every tool-call
// format: the tiny model (random weights) with a real chat template of that family and the family's markers as
// control tokens answers with finish_reason "tool_calls" and calls whose name is allowed and whose arguments
// satisfy the tool's schema (a required integer, a string enum), because the grammar leaves it no other text;
// parallel_tool_calls false gives exactly one call; the logprobs show the control-token markers sampled as those
// tokens. The Messages API's tool_choice "tool" too.
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

const std::string tools = R"("tools":[
    {"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{
        "city":{"type":"string","maxLength":12},"days":{"type":"integer"},
        "unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city","days","unit"]}}},
    {"type":"function","function":{"name":"get_time","description":"Time","parameters":{"type":"object","properties":{
        "zone":{"type":"string","enum":["UTC","CET"]},"hour":{"type":"integer"}},"required":["zone","hour"]}}}])";

struct family {
    const char* template_file;
    std::vector<std::string> control_tokens;
    const char* extra = "";             ///< more request fields (a template switch)
    std::vector<std::string> serve{};   ///< more `sluice serve` flags
    std::vector<std::string> sampled{}; ///< control tokens every call is written with (seen in the logprobs)
};

std::filesystem::path model_for(const family& f) {
    std::ifstream in(std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures/chat-templates" / f.template_file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_FALSE(text.str().empty()) << f.template_file;
    const std::string name(f.template_file);
    return tiny_model_with_template(name.substr(0, name.rfind('.')), text.str(), f.control_tokens);
}

/// A call of the response: its name is `expected` (or either tool) and its arguments satisfy that tool's schema.
void expect_valid_call(const json::value& call, const std::string& expected) {
    const auto& fn = call.at("function");
    const std::string name(fn.at("name").as_string());
    if (!expected.empty()) {
        EXPECT_EQ(name, expected);
    }
    const auto args = json::parse(fn.at("arguments").as_string()).as_object();
    if (name == "get_weather") {
        EXPECT_EQ(args.size(), 3U) << args;
        EXPECT_TRUE(args.at("city").is_string()) << args;
        EXPECT_LE(args.at("city").as_string().size(), 12U * 4) << args;
        EXPECT_TRUE(args.at("days").is_int64() || args.at("days").is_uint64()) << args;
        EXPECT_TRUE(args.at("unit") == "celsius" || args.at("unit") == "fahrenheit") << args;
    } else {
        ASSERT_EQ(name, "get_time");
        EXPECT_EQ(args.size(), 2U) << args;
        EXPECT_TRUE(args.at("zone") == "UTC" || args.at("zone") == "CET") << args;
        EXPECT_TRUE(args.at("hour").is_int64() || args.at("hour").is_uint64()) << args;
    }
}

/// Calls of a chat answer that must have finished with tool calls.
json::array calls_of(const http_reply& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) {
        return {};
    }
    const auto doc = body_json(r);
    const auto& choice = doc.at("choices").at(0);
    EXPECT_EQ(choice.at("finish_reason"), "tool_calls") << r.body;
    const auto* calls = choice.at("message").as_object().if_contains("tool_calls");
    EXPECT_TRUE(calls != nullptr && calls->is_array()) << r.body;
    return calls != nullptr && calls->is_array() ? calls->as_array() : json::array{};
}

void expect_forced_calls(const family& f) {
    SCOPED_TRACE(f.template_file);
    server_process server(f.serve, model_for(f));
    const std::string ask = R"({"messages":[{"role":"user","content":"Weather in Lima?"}],)" + tools +
                            R"(,"max_tokens":400,"temperature":1,)" + f.extra;
    for (int seed = 1; seed <= 2; ++seed) {
        const auto calls = calls_of(post_json(server.port(), "/v1/chat/completions",
                                              ask + R"("tool_choice":"required","parallel_tool_calls":false,"seed":)" +
                                                  std::to_string(seed) + "}"));
        ASSERT_EQ(calls.size(), 1U);
        expect_valid_call(calls[0], "");
    }
    // The markers that are control tokens were sampled as those tokens, not spelled in text.
    const auto logged = post_json(server.port(), "/v1/chat/completions",
                                  ask + R"("tool_choice":"required","parallel_tool_calls":false,"logprobs":true})");
    ASSERT_EQ(logged.status, 200) << logged.body;
    std::vector<std::string> tokens;
    const auto logged_doc = body_json(logged);
    for (const auto& e : logged_doc.at("choices").at(0).at("logprobs").at("content").as_array()) {
        tokens.emplace_back(e.at("token").as_string());
    }
    for (const auto& m : f.sampled) {
        EXPECT_NE(std::find(tokens.begin(), tokens.end(), m), tokens.end()) << m << "\n" << logged.body;
    }
    const std::string named = ask + R"("tool_choice":{"type":"function","function":{"name":"get_time"}},)";
    const auto one =
        calls_of(post_json(server.port(), "/v1/chat/completions", named + R"("parallel_tool_calls":false,"seed":3})"));
    ASSERT_EQ(one.size(), 1U);
    expect_valid_call(one[0], "get_time");
    // Streamed: the markers (control tokens among them) reach the parser, and the call comes as deltas.
    const auto streamed = post_json(server.port(), "/v1/chat/completions",
                                    named + R"("parallel_tool_calls":false,"seed":3,"stream":true})");
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    EXPECT_NE(streamed.body.find(R"("name":"get_time")"), std::string::npos) << streamed.body;
    EXPECT_NE(streamed.body.find(R"("finish_reason":"tool_calls")"), std::string::npos) << streamed.body;
    // parallel_tool_calls true (the default): one or more calls, every one to the named function.
    const auto r = post_json(server.port(), "/v1/chat/completions", named + R"("seed":4})");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto doc = body_json(r);
    const auto* calls = doc.at("choices").at(0).at("message").as_object().if_contains("tool_calls");
    ASSERT_TRUE(calls != nullptr && calls->is_array() && !calls->as_array().empty()) << r.body;
    for (const auto& c : calls->as_array()) {
        expect_valid_call(c, "get_time");
    }
}

TEST(forced_tool_calls, qwen3_coder_xml_calls) {
    expect_forced_calls({"Qwen3.5-4B.jinja", {}, R"("chat_template_kwargs":{"enable_thinking":false},)"});
}

TEST(forced_tool_calls, glm45_arg_key_calls) {
    expect_forced_calls({"GLM-4.7-Flash.jinja", {}, R"("chat_template_kwargs":{"enable_thinking":false},)"});
}

TEST(forced_tool_calls, llama3_json_calls) {
    expect_forced_calls({"meta-llama-Llama-3.1-8B-Instruct.jinja", {"<|python_tag|>"}});
}

TEST(forced_tool_calls, mistral_array_calls) {
    expect_forced_calls({"mistralai-Mistral-Nemo-Instruct-2407.jinja", {"[TOOL_CALLS]"}, "", {}, {"[TOOL_CALLS]"}});
}

TEST(forced_tool_calls, mistral_args_calls) {
    // Devstral's system prompt alone is about 4000 tokens.
    expect_forced_calls({"unsloth-mistral-Devstral-Small-2507.jinja",
                         {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"},
                         "",
                         {"--ctx", "8192"},
                         {"[TOOL_CALLS]", "[ARGS]"}});
}

TEST(forced_tool_calls, deepseek_v3_calls) {
    const std::vector<std::string> markers{"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                                           "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"};
    expect_forced_calls({"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", markers, "", {}, markers});
}

TEST(forced_tool_calls, kimi_k2_calls) {
    const std::vector<std::string> markers{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                                           "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"};
    expect_forced_calls({"Kimi-K2-Instruct.jinja", markers, "", {}, markers});
}

TEST(forced_tool_calls, harmony_commentary_calls) {
    expect_forced_calls(
        {"openai-gpt-oss-120b.jinja",
         {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>"},
         "",
         {},
         {"<|channel|>", "<|message|>"}}); // <|call|> ends generation (the tokenizer knows it so): not sampled
}

TEST(forced_tool_calls, messages_api_tool_choice_tool_in_the_kimi_format) {
    server_process server({},
                          model_for({"Kimi-K2-Instruct.jinja",
                                     {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
                                      "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"}}));
    const std::string body = R"({"model":"m","max_tokens":400,"temperature":1,
        "messages":[{"role":"user","content":"Time?"}],
        "tools":[{"name":"get_time","input_schema":{"type":"object","properties":{
            "zone":{"type":"string","enum":["UTC","CET"]},"hour":{"type":"integer"}},"required":["zone","hour"]}}],
        "tool_choice":{"type":"tool","name":"get_time","disable_parallel_tool_use":true}})";
    const auto r = post_json(server.port(), "/v1/messages", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const auto doc = body_json(r);
    EXPECT_EQ(doc.at("stop_reason"), "tool_use") << r.body;
    std::size_t uses = 0;
    for (const auto& block : doc.at("content").as_array()) {
        if (block.at("type") == "tool_use") {
            ++uses;
            EXPECT_EQ(block.at("name"), "get_time");
            const auto& input = block.at("input").as_object();
            EXPECT_TRUE(input.at("zone") == "UTC" || input.at("zone") == "CET") << r.body;
            EXPECT_TRUE(input.at("hour").is_int64() || input.at("hour").is_uint64()) << r.body;
        }
    }
    EXPECT_EQ(uses, 1U) << r.body;
}

} // namespace
} // namespace sluice::test
