// Request-body parsing in process: what reaches the engine's generate_request.
#include "server/openai_request.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace sluice::server {
namespace {

namespace json = boost::json;

const std::string tools = R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";

TEST(openai_request, tools_reach_the_chat_template_as_the_tools_variable) {
    auto r = parse_completion_request(R"({"messages":[{"role":"user","content":"hi"}],"tools":)" + tools + "}",
                                      completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->generate.template_kwargs.contains("tools"));
    EXPECT_EQ(r->generate.template_kwargs.at("tools"), json::parse(tools));
}

TEST(openai_request, tool_choice_none_leaves_the_tools_out) {
    auto r = parse_completion_request(R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"none","tools":)" +
                                          tools + "}",
                                      completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->generate.template_kwargs.contains("tools"));
}

TEST(openai_request, text_parts_are_joined_and_developer_reads_as_system) {
    auto r = parse_completion_request(
        R"({"messages":[{"role":"developer","content":"rules"},
                        {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})",
        completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    const auto& m = r->generate.messages;
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].at("role"), "system");
    EXPECT_EQ(m[1].at("content"), "a\nb");
}

TEST(openai_request, sampling_fields_and_defaults_reach_the_engine) {
    auto r = parse_completion_request(
        R"({"prompt":"x","temperature":0,"top_p":0.5,"top_k":7,"min_p":0.1,"seed":-1,"stop":"END",
            "presence_penalty":0.5,"frequency_penalty":-0.5,"repeat_penalty":1.1,"user":"u","model":"m"})",
        completion_kind::completion, 1234);
    ASSERT_TRUE(r) << r.error().message;
    const auto& s = r->generate.sampling;
    EXPECT_EQ(s.temperature, 0.0f);
    EXPECT_EQ(s.top_p, 0.5f);
    EXPECT_EQ(s.top_k, 7);
    EXPECT_EQ(s.min_p, 0.1f);
    EXPECT_EQ(s.seed, 1234u);
    EXPECT_EQ(s.presence_penalty, 0.5f);
    EXPECT_EQ(s.frequency_penalty, -0.5f);
    EXPECT_EQ(s.repeat_penalty, 1.1f);
    EXPECT_EQ(r->generate.stop, std::vector<std::string>{"END"});
    EXPECT_EQ(r->generate.max_tokens, 16u); // legacy completions default
    EXPECT_EQ(r->model, "m");
    auto chat =
        parse_completion_request(R"({"messages":[{"role":"user","content":"hi"}],"seed":5})", completion_kind::chat, 1);
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->generate.max_tokens, 0u); // chat: until the end or a full context
    EXPECT_EQ(chat->generate.sampling.seed, 5u);
}

TEST(openai_request, max_completion_tokens_wins_and_nulls_mean_default) {
    auto r = parse_completion_request(
        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":9,"max_completion_tokens":3,"temperature":null})",
        completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->generate.max_tokens, 3u);
    EXPECT_EQ(r->generate.sampling.temperature, sampling_params{}.temperature);
}

TEST(openai_request, n_logprobs_and_top_logprobs_reach_the_request_and_the_engine) {
    auto r = parse_completion_request(
        R"({"messages":[{"role":"user","content":"hi"}],"n":3,"logprobs":true,"top_logprobs":5})",
        completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->n, 3u);
    EXPECT_TRUE(r->logprobs);
    EXPECT_EQ(r->top_logprobs, 5u);
    EXPECT_EQ(r->generate.top_logprobs, 5u);
    auto c = parse_completion_request(R"({"prompt":"x","logprobs":0})", completion_kind::completion, 1);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_TRUE(c->logprobs);
    EXPECT_EQ(c->top_logprobs, 0u);
    auto none = parse_completion_request(R"({"prompt":"x"})", completion_kind::completion, 1);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->logprobs);
}

TEST(openai_request, chat_template_kwargs_and_reasoning_effort_become_template_variables) {
    auto r = parse_completion_request(
        R"({"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high",
            "chat_template_kwargs":{"enable_thinking":false,"custom":{"a":[1]}}})",
        completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    const auto& kw = r->generate.template_kwargs;
    EXPECT_EQ(kw.at("enable_thinking"), json::value(false));
    EXPECT_EQ(kw.at("reasoning_effort"), json::value("high"));
    EXPECT_EQ(kw.at("custom"), json::parse(R"({"a":[1]})"));
}

TEST(openai_request, tools_are_parsed_unless_tool_choice_is_none_and_parallel_calls_can_be_turned_off) {
    auto r = parse_completion_request(R"({"messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":false,)"
                                      R"("tool_choice":"auto","tools":)" +
                                          tools + "}",
                                      completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->parse_tool_calls);
    EXPECT_FALSE(r->parallel_tool_calls);
    EXPECT_EQ(json::value(r->tools), json::parse(tools));
    auto none = parse_completion_request(
        R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"none","tools":)" + tools + "}",
        completion_kind::chat, 1);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->parse_tool_calls);
}

TEST(openai_request, history_reasoning_and_string_arguments_reach_the_template_as_templates_read_them) {
    auto r = parse_completion_request(
        R"({"messages":[{"role":"user","content":"hi"},
            {"role":"assistant","content":null,"reasoning_content":"think","refusal":null,
             "tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
            {"role":"tool","tool_call_id":"call_1","content":"2"}]})",
        completion_kind::chat, 1);
    ASSERT_TRUE(r) << r.error().message;
    const auto& a = r->generate.messages[1].as_object();
    EXPECT_EQ(a.at("reasoning_content"), json::value("think"));
    EXPECT_EQ(a.at("thinking"), json::value("think"));
    EXPECT_EQ(a.at("tool_calls").at(0).at("function").at("arguments"), json::parse(R"({"a":1})"));
}

} // namespace
} // namespace sluice::server
