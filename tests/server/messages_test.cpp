// Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens) against `sluice serve` on the tiny model over
// real sockets: the message object, the streamed events in Anthropic's order, thinking blocks, the history's
// blocks rendered exactly as their OpenAI-form equivalent, prefill, stop sequences, Anthropic-shaped errors and
// authentication with x-api-key.
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

const std::string hello = R"("model":"claude-test","messages":[{"role":"user","content":"Hello"}])";

/// ChatML that shows what the translation must hand the template: reasoning, tool calls, tool messages, tools.
constexpr std::string_view history_template =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.id }} {{ c.function.name }} {{ c.function.arguments|tojson }}"
    "</tool_call>{% endfor %}{% if m.role == 'tool' %} [{{ m.tool_call_id }} {{ m.name }}]{% endif %}<|im_end|>\n"
    "{% endfor %}{% if tools %}tools: {{ tools|tojson }}\n{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// ChatML whose generation prompt opens <think> unless enable_thinking is false (Qwen3's switch).
constexpr std::string_view thinking_template =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}";

json::object parse_object(const http_reply& r) {
    auto v = body_json(r);
    EXPECT_TRUE(v.is_object()) << r.body;
    return v.is_object() ? v.as_object() : json::object{};
}

/// Empty when `r` carries {"type": "error", "error": {"type": `type`, "message": non-empty}}, else the problem.
std::string anthropic_error_problem(const http_reply& r, std::string_view type) {
    if (r.headers.count("content-type") == 0 || r.headers.at("content-type") != "application/json") {
        return "Content-Type is not application/json: " + r.body;
    }
    const auto v = body_json(r);
    const auto* o = v.if_object();
    if (o == nullptr || o->size() != 2 || !o->contains("type") || o->at("type") != "error" || !o->contains("error")) {
        return "not {\"type\": \"error\", \"error\": ...}: " + r.body;
    }
    const auto* e = o->at("error").if_object();
    if (e == nullptr || !e->contains("message") || !e->at("message").is_string() ||
        e->at("message").as_string().empty() || !e->contains("type") || e->at("type") != json::value(type)) {
        return "error is not {type: " + std::string(type) + ", message}: " + r.body;
    }
    return {};
}

/// The `event:` names and data payloads of an Anthropic SSE body.
std::vector<std::pair<std::string, json::object>> sse_events(const std::string& body) {
    std::vector<std::pair<std::string, json::object>> out;
    std::size_t pos = 0;
    while ((pos = body.find("event: ", pos)) != std::string::npos) {
        const auto name_end = body.find('\n', pos);
        const auto data = body.find("data: ", name_end);
        const auto end = body.find("\n\n", data);
        out.emplace_back(body.substr(pos + 7, name_end - pos - 7),
                         json::parse(body.substr(data + 6, end - data - 6)).as_object());
        pos = end;
    }
    return out;
}

/// The text of every text block of a message.
std::string text_of(const json::object& message) {
    std::string text;
    for (const auto& b : message.at("content").as_array()) {
        if (b.at("type") == "text") {
            text += std::string(b.at("text").as_string());
        }
    }
    return text;
}

std::int64_t count_tokens(unsigned short port, const std::string& fields) {
    const auto r = post_json(port, "/v1/messages/count_tokens", "{" + fields + "}");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? body_json(r).at("input_tokens").as_int64() : -1;
}

TEST(messages, whole_answer_is_an_anthropic_message_with_usage) {
    server_process server;
    const auto r = post_json(server.port(), "/v1/messages", "{" + hello + R"(,"max_tokens":5,"temperature":0})");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto o = parse_object(r);
    EXPECT_EQ(std::string(o.at("id").as_string()).substr(0, 4), "msg_");
    EXPECT_EQ(o.at("type"), "message");
    EXPECT_EQ(o.at("role"), "assistant");
    EXPECT_EQ(o.at("model"), "tiny-qwen3moe");
    ASSERT_EQ(o.at("content").as_array().size(), 1u) << r.body;
    EXPECT_EQ(o.at("content").at(0).at("type"), "text");
    EXPECT_FALSE(o.at("content").at(0).at("text").as_string().empty());
    EXPECT_EQ(o.at("stop_reason"), "max_tokens");
    EXPECT_TRUE(o.at("stop_sequence").is_null());
    const auto& usage = o.at("usage").as_object();
    EXPECT_EQ(usage.at("output_tokens").as_int64(), 5);
    EXPECT_GT(usage.at("input_tokens").as_int64(), 0);
    EXPECT_EQ(usage.at("cache_read_input_tokens").as_int64(), 0);
    // The same prompt again reuses the slot's cache: reported as cache reads, the total unchanged.
    const auto again =
        parse_object(post_json(server.port(), "/v1/messages", "{" + hello + R"(,"max_tokens":5,"temperature":0})"));
    const auto& u2 = again.at("usage").as_object();
    EXPECT_GT(u2.at("cache_read_input_tokens").as_int64(), 0);
    EXPECT_EQ(u2.at("input_tokens").as_int64() + u2.at("cache_read_input_tokens").as_int64(),
              usage.at("input_tokens").as_int64());
    EXPECT_EQ(count_tokens(server.port(), hello), usage.at("input_tokens").as_int64());
}

TEST(messages, streamed_events_come_in_anthropic_order_and_agree_with_the_whole_answer) {
    server_process server;
    const std::string body = "{" + hello + R"(,"max_tokens":6,"temperature":0)";
    const auto whole = parse_object(post_json(server.port(), "/v1/messages", body + "}"));
    const auto r =
        post_json(server.port(), "/v1/messages", body + R"(,"stream":true})", {{"anthropic-version", "2023-06-01"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
    const auto events = sse_events(r.body);
    ASSERT_GE(events.size(), 7u) << r.body;
    std::vector<std::string> names;
    for (const auto& [name, data] : events) {
        EXPECT_EQ(data.at("type"), json::value(name)) << "the event name is the payload's type";
        if (names.empty() || names.back() != name || name != "content_block_delta") {
            names.push_back(name);
        }
    }
    const std::vector<std::string> expected{
        "message_start",      "ping",          "content_block_start", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop"};
    EXPECT_EQ(names, expected) << r.body;
    const auto& start = events.front().second.at("message").as_object();
    EXPECT_EQ(std::string(start.at("id").as_string()).substr(0, 4), "msg_");
    EXPECT_TRUE(start.at("content").as_array().empty());
    EXPECT_TRUE(start.at("stop_reason").is_null());
    std::string text;
    for (const auto& [name, data] : events) {
        if (name == "content_block_delta") {
            EXPECT_EQ(data.at("index").as_int64(), 0);
            EXPECT_EQ(data.at("delta").at("type"), "text_delta");
            text += std::string(data.at("delta").at("text").as_string());
        }
    }
    EXPECT_EQ(text, text_of(whole));
    const auto& end = events[events.size() - 2].second;
    EXPECT_EQ(end.at("delta").at("stop_reason"), "max_tokens");
    EXPECT_EQ(end.at("usage").at("output_tokens").as_int64(), 6);
    EXPECT_EQ(end.at("usage").at("input_tokens").as_int64() + end.at("usage").at("cache_read_input_tokens").as_int64(),
              whole.at("usage").at("input_tokens").as_int64());
}

TEST(messages, thinking_enabled_gives_a_signed_thinking_block_and_disabled_closes_the_think_tag) {
    server_process server({}, tiny_model_with_template("anthropic-thinking", thinking_template));
    const std::string body = "{" + hello + R"(,"max_tokens":5,"temperature":0)";
    const std::string enabled = R"(,"thinking":{"type":"enabled","budget_tokens":1024})";
    const auto r = post_json(server.port(), "/v1/messages", body + enabled + "}");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto o = parse_object(r);
    ASSERT_EQ(o.at("content").as_array().size(), 1u) << r.body; // the tiny model never closes <think>
    const auto& block = o.at("content").at(0).as_object();
    EXPECT_EQ(block.at("type"), "thinking");
    EXPECT_FALSE(block.at("thinking").as_string().empty());
    EXPECT_TRUE(block.at("signature").is_string());

    const auto s = post_json(server.port(), "/v1/messages", body + enabled + R"(,"stream":true})");
    ASSERT_EQ(s.status, 200) << s.body;
    const auto events = sse_events(s.body);
    std::string thinking;
    std::vector<std::string> deltas;
    for (const auto& [name, data] : events) {
        if (name == "content_block_start") {
            EXPECT_EQ(data.at("content_block").at("type"), "thinking");
        }
        if (name == "content_block_delta") {
            deltas.emplace_back(data.at("delta").at("type").as_string());
            if (deltas.back() == "thinking_delta") {
                thinking += std::string(data.at("delta").at("thinking").as_string());
            }
        }
    }
    EXPECT_EQ(thinking, std::string(block.at("thinking").as_string()));
    ASSERT_FALSE(deltas.empty());
    EXPECT_EQ(deltas.back(), "signature_delta") << "the signature closes the thinking block";

    // Without thinking (the API's default) the template gets enable_thinking false: a closed, longer prompt.
    const auto plain = parse_object(post_json(server.port(), "/v1/messages", body + "}"));
    EXPECT_EQ(plain.at("content").at(0).at("type"), "text");
    EXPECT_GT(count_tokens(server.port(), hello), count_tokens(server.port(), hello + enabled));
}

/// A history with every block the translation handles, and the OpenAI-form messages it must equal.
const std::string anthropic_history =
    R"("model":"m","system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],)"
    R"("messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]},)"
    R"({"role":"assistant","content":[{"type":"thinking","thinking":"Ask the tool.","signature":"x"},)"
    R"({"type":"redacted_thinking","data":"abc"},{"type":"text","text":"Checking."},)"
    R"({"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},)"
    R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},)"
    R"({"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"late"}]},)"
    R"({"type":"text","text":"And Rome?"}]}],)"
    R"("tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"},)"
    R"("defer_loading":false,"eager_input_streaming":true,"strict":true,"cache_control":{"type":"ephemeral"}}])";
const std::string openai_history =
    R"("messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Paris?"},)"
    R"({"role":"assistant","content":"Checking.","reasoning_content":"Ask the tool.","tool_calls":[{"id":"toolu_1",)"
    R"("type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
    R"({"role":"tool","tool_call_id":"toolu_1","name":"get_weather","content":"sunny"},)"
    R"({"role":"tool","tool_call_id":"toolu_1","name":"get_weather","content":"Error: late"},)"
    R"({"role":"user","content":"And Rome?"}],)"
    R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Weather",)"
    R"("parameters":{"type":"object"}}}])";

TEST(messages, tool_use_history_renders_exactly_as_its_openai_form_and_round_trips) {
    server_process server({}, tiny_model_with_template("anthropic-history", history_template));
    const auto openai = post_json(server.port(), "/v1/chat/completions", "{" + openai_history + R"(,"max_tokens":1})");
    ASSERT_EQ(openai.status, 200) << openai.body;
    const auto expected = body_json(openai).at("usage").at("prompt_tokens").as_int64();
    EXPECT_EQ(count_tokens(server.port(), anthropic_history), expected);
    // Without the tools, or with tool_choice none, the prompt is shorter by the tools line.
    const auto r = post_json(server.port(), "/v1/messages",
                             "{" + anthropic_history + R"(,"max_tokens":2,"tool_choice":{"type":"none"}})");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto usage = body_json(r).at("usage");
    EXPECT_LT(usage.at("input_tokens").as_int64() + usage.at("cache_read_input_tokens").as_int64(), expected);
    const auto with_tools = post_json(server.port(), "/v1/messages",
                                      "{" + anthropic_history +
                                          R"(,"max_tokens":2,"tool_choice":{"type":"auto",)"
                                          R"("disable_parallel_tool_use":true}})");
    ASSERT_EQ(with_tools.status, 200) << with_tools.body;
}

TEST(messages, an_assistant_prefill_is_continued_after_the_generation_prompt) {
    server_process server;
    const std::string prefill = R"(,{"role":"assistant","content":"The answer is"})";
    const std::string fields = R"("model":"m","messages":[{"role":"user","content":"Hello"})";
    const auto without = count_tokens(server.port(), fields + "]");
    const auto with = count_tokens(server.port(), fields + prefill + "]");
    const auto tok = post_json(server.port(), "/tokenize", R"({"content":"The answer is"})");
    ASSERT_EQ(tok.status, 200) << tok.body;
    EXPECT_EQ(with - without, static_cast<std::int64_t>(body_json(tok).at("tokens").as_array().size()));
    const auto r = post_json(server.port(), "/v1/messages", "{" + fields + prefill + R"(],"max_tokens":3})");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(body_json(r).at("usage").at("input_tokens").as_int64(), with);
}

TEST(messages, a_stop_sequence_ends_the_answer_with_stop_reason_stop_sequence) {
    server_process server;
    const std::string body = "{" + hello + R"(,"max_tokens":12,"temperature":0)";
    const auto whole = parse_object(post_json(server.port(), "/v1/messages", body + "}"));
    const std::string text = text_of(whole);
    ASSERT_GE(text.size(), 6u) << text;
    const std::string stop = text.substr(text.size() / 2, 2);
    for (const std::string stream : {"false", "true"}) {
        const auto r = post_json(server.port(), "/v1/messages",
                                 body + R"(,"stop_sequences":[")" + stop + R"("],"stream":)" + stream + "}");
        ASSERT_EQ(r.status, 200) << r.body;
        const json::object* end = nullptr;
        json::object whole_answer;
        std::vector<std::pair<std::string, json::object>> events;
        if (stream == "true") {
            events = sse_events(r.body);
            ASSERT_GE(events.size(), 2u) << r.body;
            end = &events[events.size() - 2].second.at("delta").as_object();
        } else {
            whole_answer = parse_object(r);
            end = &whole_answer;
            EXPECT_EQ(text_of(whole_answer), text.substr(0, text.find(stop)));
        }
        EXPECT_EQ(end->at("stop_reason"), "stop_sequence") << r.body;
        EXPECT_EQ(end->at("stop_sequence"), json::value(stop)) << r.body;
    }
}

TEST(messages, bad_requests_are_anthropic_shaped_400s_naming_the_problem) {
    server_process server;
    const std::string user = R"("messages":[{"role":"user","content":"Hi"}])";
    const std::vector<std::pair<std::string, std::string>> cases{
        {R"({"model":"m",)" + user + "}", "max_tokens"},
        {R"({"max_tokens":5,)" + user + "}", "model"},
        {R"({"model":"m","max_tokens":5})", "messages"},
        {R"({"model":"m","max_tokens":5,"messages":[]})", "messages"},
        {R"({"model":"m","max_tokens":0,)" + user + "}", "max_tokens"},
        {R"({"model":"m","max_tokens":5,"container":"c",)" + user + "}", "container"},
        {R"({"model":"m","max_tokens":5,"temperature":1.5,)" + user + "}", "temperature"},
        {R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]})", "role"},
        {R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image",)"
         R"("source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]})",
         "image"},
        {R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document",)"
         R"("source":{"type":"text","media_type":"text/plain","data":"x"}}]}]})",
         "document"},
        {R"({"model":"m","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],)" + user + "}",
         "server tools"},
        {R"({"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{},"color":1}],)" + user + "}", "color"},
        {R"({"model":"m","max_tokens":5,"tool_choice":{"type":"any"},)" + user + "}", "needs tools"},
        {R"({"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{}}],)"
         R"("tool_choice":{"type":"tool","name":"u"},)" +
             user + "}",
         "'u' is not among the tools"},
        {R"({"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{}}],"tool_choice":{"type":"tool"},)" +
             user + "}",
         "tool_choice.name"},
        {R"({"model":"m","max_tokens":5,"thinking":{"type":"enabled"},)" + user + "}", "budget_tokens"},
        {R"({"model":"m","max_tokens":5,"stop_sequences":"x",)" + user + "}", "stop_sequences"},
        {R"({"model":"m","max_tokens":5,)" + user, "JSON"},
    };
    for (const auto& [body, mention] : cases) {
        const auto r = post_json(server.port(), "/v1/messages", body);
        EXPECT_EQ(r.status, 400) << body << "\n" << r.body;
        EXPECT_EQ(anthropic_error_problem(r, "invalid_request_error"), "") << body;
        EXPECT_NE(r.body.find(mention), std::string::npos) << body << "\n" << r.body;
    }
    // count_tokens takes the prompt's fields only.
    const auto counted =
        post_json(server.port(), "/v1/messages/count_tokens", R"({"model":"m","max_tokens":5,)" + user + "}");
    EXPECT_EQ(counted.status, 400) << counted.body;
    EXPECT_EQ(anthropic_error_problem(counted, "invalid_request_error"), "");
    // Fields Claude Code sends beyond the documented schema are accepted.
    const auto claude_code = post_json(
        server.port(), "/v1/messages",
        R"({"model":"m","max_tokens":2,"metadata":{"user_id":"u"},"context_management":{"edits":[]},)"
        R"("output_config":{"effort":"high"},"service_tier":"auto","thinking":{"type":"disabled"},)"
        R"("messages":[{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral"}}]}],)"
        R"("tools":[{"name":"t","input_schema":{"type":"object"},"input_examples":[{}],"defer_loading":true}]})");
    EXPECT_EQ(claude_code.status, 200) << claude_code.body;
    const auto unknown = send_request(server.port(), "POST", "/v1/messages/batches", "{}");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_EQ(anthropic_error_problem(unknown, "not_found_error"), "");
    const auto wrong_method = send_request(server.port(), "GET", "/v1/messages");
    EXPECT_EQ(wrong_method.status, 405);
    EXPECT_EQ(anthropic_error_problem(wrong_method, "invalid_request_error"), "");
}

TEST(messages, a_body_over_max_body_is_an_anthropic_413_request_too_large) {
    server_process server({"--max-body", "1KiB"});
    const std::string big(2048, 'x');
    const auto r = post_json(server.port(), "/v1/messages",
                             R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":")" + big + R"("}]})");
    EXPECT_EQ(r.status, 413) << r.body;
    EXPECT_EQ(anthropic_error_problem(r, "request_too_large"), "");
}

TEST(messages, a_request_shaped_like_claude_codes_streams_to_message_stop) {
    server_process server;
    // What Claude Code sends: ?beta=true, system blocks with cache_control, tools with its extra fields, thinking,
    // metadata, context_management, output_config, a tool round trip with cache_control on the last block.
    const std::string body =
        R"({"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"temperature":1,)"
        R"("metadata":{"user_id":"user_abc_account__session_1"},"context_management":{"edits":[]},)"
        R"("output_config":{"effort":"medium"},"thinking":{"type":"enabled","budget_tokens":1024},)"
        R"("system":[{"type":"text","text":"You are a coding agent."},)"
        R"({"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],)"
        R"("tools":[{"name":"Bash","description":"Runs a command","input_schema":{"type":"object",)"
        R"("properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false,)"
        R"("$schema":"http://json-schema.org/draft-07/schema#"},"eager_input_streaming":true}],)"
        R"("messages":[{"role":"user","content":[{"type":"text","text":"List the files."}]},)"
        R"({"role":"assistant","content":[{"type":"thinking","thinking":"Run ls.","signature":""},)"
        R"({"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}]},)"
        R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"a.txt",)"
        R"("cache_control":{"type":"ephemeral"}}]}]})";
    const auto r =
        post_json(server.port(), "/v1/messages?beta=true", body, {{"anthropic-beta", "interleaved-thinking"}});
    ASSERT_EQ(r.status, 200) << r.body;
    const auto events = sse_events(r.body);
    ASSERT_GE(events.size(), 4u) << r.body;
    EXPECT_EQ(events.front().first, "message_start");
    EXPECT_EQ(events.back().first, "message_stop");
    EXPECT_EQ(events[events.size() - 2].first, "message_delta");
    const auto counted = post_json(server.port(), "/v1/messages/count_tokens?beta=true",
                                   R"({"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hi"}],)"
                                   R"("tools":[{"name":"Bash","input_schema":{"type":"object"}}]})");
    EXPECT_EQ(counted.status, 200) << counted.body;
}

TEST(messages, api_key_is_accepted_as_x_api_key_or_bearer_and_refusals_are_anthropic_shaped) {
    server_process server({"--api-key", "sekret"});
    const std::string body = "{" + hello + R"(,"max_tokens":1})";
    const auto none = post_json(server.port(), "/v1/messages", body);
    EXPECT_EQ(none.status, 401);
    EXPECT_EQ(anthropic_error_problem(none, "authentication_error"), "");
    const auto wrong = post_json(server.port(), "/v1/messages", body, {{"x-api-key", "nope"}});
    EXPECT_EQ(wrong.status, 401);
    EXPECT_EQ(anthropic_error_problem(wrong, "authentication_error"), "");
    // As Claude Code sends it: x-api-key, the version and beta headers, and ?beta=true.
    const auto x_api_key = post_json(server.port(), "/v1/messages?beta=true", body,
                                     {{"x-api-key", "sekret"},
                                      {"anthropic-version", "2023-06-01"},
                                      {"anthropic-beta", "fine-grained-tool-streaming"}});
    EXPECT_EQ(x_api_key.status, 200) << x_api_key.body;
    const auto bearer = post_json(server.port(), "/v1/messages", body, {{"Authorization", "Bearer sekret"}});
    EXPECT_EQ(bearer.status, 200) << bearer.body;
    // The OpenAI routes keep their own error shape.
    const auto openai = post_json(server.port(), "/v1/chat/completions", R"({"messages":[]})");
    EXPECT_EQ(openai.status, 401);
    EXPECT_EQ(openai_error_problem(openai), "");
}

TEST(messages, tool_choice_any_and_tool_force_a_call_that_follows_the_input_schema) {
    // The bundled model's template writes Hermes <tool_call> JSON, so a grammar can force the call.
    server_process server;
    const std::string tools = R"("tools":[{"name":"add","input_schema":{"type":"object","properties":{)"
                              R"("a":{"type":"boolean"},"b":{"enum":[1,2,3]}},"required":["a","b"]}},)"
                              R"({"name":"capital","input_schema":{"type":"object","properties":{)"
                              R"("country":{"type":"string","maxLength":12}},"required":["country"]}}])";
    const std::string ask = R"({"model":"m","max_tokens":400,"temperature":1,"messages":[{"role":"user",)"
                            R"("content":"What is the capital of Peru?"}],)" +
                            tools + ",";
    for (const std::string choice : {R"({"type":"tool","name":"capital","disable_parallel_tool_use":true})",
                                     R"({"type":"any","disable_parallel_tool_use":true})"}) {
        const auto r = post_json(server.port(), "/v1/messages", ask + R"("tool_choice":)" + choice + "}");
        ASSERT_EQ(r.status, 200) << r.body;
        const auto message = parse_object(r);
        EXPECT_EQ(message.at("stop_reason"), "tool_use") << r.body;
        const auto& content = message.at("content").as_array();
        ASSERT_EQ(content.size(), 1U) << r.body;
        const auto& call = content[0].as_object();
        ASSERT_EQ(call.at("type"), "tool_use") << r.body;
        const auto& input = call.at("input").as_object();
        if (call.at("name") == "capital") {
            EXPECT_TRUE(input.at("country").is_string()) << r.body;
            const auto& country = input.at("country").as_string(); // maxLength counts characters, not bytes
            EXPECT_LE(std::count_if(country.begin(), country.end(), [](char c) { return (c & 0xC0) != 0x80; }), 12)
                << r.body;
        } else {
            ASSERT_EQ(call.at("name"), "add") << r.body;
            EXPECT_TRUE(input.at("a").is_bool() && input.at("b").is_int64()) << r.body;
        }
        if (choice.find("capital") != std::string::npos) {
            EXPECT_EQ(call.at("name"), "capital");
        }
    }
}

TEST(messages, output_config_format_json_schema_makes_the_text_follow_the_schema) {
    server_process server;
    const std::string ask =
        R"({"model":"m","max_tokens":300,"temperature":1,"messages":[{"role":"user",)"
        R"("content":"Is Lima the capital of Peru?"}],"output_config":{"format":{"type":"json_schema",)";
    const std::string schema =
        R"("schema":{"type":"object","properties":{"answer":{"enum":["yes","no"]},)"
        R"("sure":{"type":"boolean"}},"required":["answer","sure"],"additionalProperties":false})";
    for (int i = 0; i < 2; ++i) {
        const auto r = post_json(server.port(), "/v1/messages", ask + schema + "}}}");
        ASSERT_EQ(r.status, 200) << r.body;
        const auto message = parse_object(r);
        EXPECT_EQ(message.at("stop_reason"), "end_turn") << r.body;
        const auto doc = json::parse(text_of(message)).as_object();
        EXPECT_TRUE(doc.at("answer") == "yes" || doc.at("answer") == "no") << r.body;
        EXPECT_TRUE(doc.at("sure").is_bool()) << r.body;
        EXPECT_EQ(doc.size(), 2U) << r.body;
    }
    const auto bad = post_json(server.port(), "/v1/messages", ask + R"("schema":{"type":"string","pattern":"^a"}}}})");
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(anthropic_error_problem(bad, "invalid_request_error"), "");
    EXPECT_NE(bad.body.find("output_config.format.schema"), std::string::npos) << bad.body;
    EXPECT_NE(bad.body.find("pattern"), std::string::npos) << bad.body;
}

} // namespace
} // namespace sluice::test
