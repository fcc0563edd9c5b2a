// The Messages API's translation and answer building, in process: content blocks to the exact OpenAI-form
// messages the chat template gets, the prefill and template variables; generated text with reasoning and tool
// calls (Qwen3/Hermes syntax, fed as token events since the tiny model cannot be made to call) to thinking and
// tool_use blocks, whole and as streamed events that rebuild the same blocks; stop reasons; error shapes.
#include "runtime/chat/chat_template.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "server/anthropic_request.hpp"
#include "server/anthropic_response.hpp"
#include "server/choice_output.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sluice::server {
namespace {

namespace json = boost::json;

const tokenizer::tokenizer& tiny_vocab() {
    static const tokenizer::tokenizer vocab = [] {
        auto files = gguf::model_files::open(test::tiny_model());
        EXPECT_TRUE(files) << files.error().message;
        auto v = tokenizer::vocab_from_gguf(files->kv());
        EXPECT_TRUE(v) << v.error().message;
        auto t = tokenizer::tokenizer::create(std::move(*v));
        EXPECT_TRUE(t) << t.error().message;
        return std::move(*t);
    }();
    return vocab;
}

messages_request parse(const std::string& body, messages_endpoint endpoint = messages_endpoint::create) {
    auto r = parse_messages_request(body, endpoint, 1);
    EXPECT_TRUE(r) << body << "\n" << (r ? "" : r.error().message);
    return r ? std::move(*r) : messages_request{};
}

TEST(anthropic_request, blocks_become_openai_form_messages_with_the_prefill_apart) {
    const auto r = parse(
        R"({"model":"m","max_tokens":9,"system":"Be brief.","stop_sequences":["END"],"temperature":0.5,"top_k":3,)"
        R"("thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"Weather?"},)"
        R"({"role":"assistant","content":[{"type":"thinking","thinking":"Tool.","signature":"s"},)"
        R"({"type":"tool_use","id":"toolu_9","name":"get_weather","input":{"city":"Paris"}}]},)"
        R"({"role":"user","content":[{"type":"text","text":"Before."},)"
        R"({"type":"tool_result","tool_use_id":"toolu_9","content":[{"type":"text","text":"a"},)"
        R"({"type":"text","text":"b"}]},{"type":"text","text":"After."}]},)"
        R"({"role":"assistant","content":[{"type":"text","text":"Sure,"}]}]})");
    const auto expected =
        json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Weather?"},)"
                    R"({"role":"assistant","content":"","tool_calls":[{"id":"toolu_9","type":"function",)"
                    R"("function":{"name":"get_weather","arguments":{"city":"Paris"}}}],"reasoning_content":"Tool.",)"
                    R"("thinking":"Tool."},{"role":"user","content":"Before."},)"
                    R"({"role":"tool","tool_call_id":"toolu_9","content":"a\nb","name":"get_weather"},)"
                    R"({"role":"user","content":"After."}])");
    EXPECT_EQ(json::value(r.chat.generate.messages), expected) << json::serialize(r.chat.generate.messages);
    EXPECT_EQ(r.prefill, "Sure,");
    EXPECT_EQ(r.chat.generate.max_tokens, 9u);
    EXPECT_EQ(r.chat.generate.stop, std::vector<std::string>{"END"});
    EXPECT_EQ(r.chat.generate.template_kwargs.at("enable_thinking"), true);
    EXPECT_FLOAT_EQ(r.chat.generate.sampling.temperature, 0.5f);
    EXPECT_EQ(r.chat.generate.sampling.top_k, 3);
    EXPECT_FALSE(r.chat.stream);
    EXPECT_FALSE(r.chat.parse_tool_calls);
}

TEST(anthropic_request, tools_become_functions_and_tool_choice_none_leaves_them_out) {
    const std::string tools =
        R"("tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"},"strict":true}])";
    const std::string head = R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],)";
    const auto r = parse(head + tools + "}");
    EXPECT_TRUE(r.chat.parse_tool_calls);
    EXPECT_TRUE(r.chat.parallel_tool_calls);
    const auto expected = json::parse(
        R"([{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}])");
    EXPECT_EQ(json::value(r.chat.tools), expected);
    EXPECT_EQ(r.chat.generate.template_kwargs.at("tools"), expected);
    EXPECT_EQ(r.chat.generate.template_kwargs.at("enable_thinking"), false);
    const auto single = parse(head + tools + R"(,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}})");
    EXPECT_FALSE(single.chat.parallel_tool_calls);
    const auto none = parse(head + tools + R"(,"tool_choice":{"type":"none"}})");
    EXPECT_FALSE(none.chat.parse_tool_calls);
    EXPECT_FALSE(none.chat.generate.template_kwargs.contains("tools"));
    // Counting needs no decoding: tool_choice "any" is fine there.
    const auto counted =
        parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"any"},)" + tools + "}",
              messages_endpoint::count_tokens);
    EXPECT_TRUE(counted.chat.parse_tool_calls);
}

/// The real chat templates of the model families that call tools, over a translated history with reasoning,
/// a call, its result and text after it (as Claude Code sends them): each renders, with the call and the result.
TEST(anthropic_request, a_translated_tool_history_renders_through_real_chat_templates) {
    const auto r =
        parse(R"({"model":"m","max_tokens":9,"system":[{"type":"text","text":"Be brief."}],"messages":[)"
              R"({"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[)"
              R"({"type":"thinking","thinking":"Ask the tool.","signature":""},)"
              R"({"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},)"
              R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},)"
              R"({"type":"text","text":"And Rome?"}]}],)"
              R"("tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object",)"
              R"("properties":{"city":{"type":"string"}}}}]})");
    for (const char* name : {"Qwen-Qwen3-0.6B", "Qwen3.5-4B", "GLM-4.7-Flash", "deepseek-ai-DeepSeek-V3.2",
                             "openai-gpt-oss-120b", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
                             "meta-llama-Llama-3.1-8B-Instruct", "google-gemma-4-31B-it", "MiniMax-M3"}) {
        auto source = chat::load_template_source(std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures/chat-templates" /
                                                 (std::string(name) + ".jinja"));
        ASSERT_TRUE(source) << name << ": " << source.error().message;
        chat::chat_inputs inputs;
        inputs.messages = r.chat.generate.messages;
        inputs.kwargs = r.chat.generate.template_kwargs;
        inputs.add_generation_prompt = true;
        const auto prompt = chat::render_chat(source->text, inputs);
        ASSERT_TRUE(prompt) << name << ": " << prompt.error().message;
        for (const char* part : {"get_weather", "Paris", "sunny", "And Rome?"}) {
            EXPECT_NE(prompt->find(part), std::string::npos) << name << " lacks " << part << ":\n" << *prompt;
        }
    }
}

output_reading hermes_reading() {
    output_reading r;
    r.syntax.tools = chat::tool_format::hermes;
    r.syntax.think_tags = true;
    return r;
}

/// Feeds `text` three bytes at a time; returns every event the blocks emitted.
std::string feed(choice_output& out, message_blocks& blocks, std::string_view text) {
    std::string events;
    for (std::size_t i = 0; i < text.size(); i += 3) {
        token_event ev;
        ev.text = std::string(text.substr(i, 3));
        events += blocks.add(out.on_event(ev));
    }
    events += blocks.add(out.finish());
    return events + blocks.close();
}

/// The content blocks rebuilt from streamed events, as a client accumulates them.
json::array rebuild(const std::string& events) {
    json::array blocks;
    std::map<std::size_t, std::string> partial_json;
    std::size_t pos = 0;
    while ((pos = events.find("data: ", pos)) != std::string::npos) {
        const auto end = events.find("\n\n", pos);
        const auto e = json::parse(events.substr(pos + 6, end - pos - 6)).as_object();
        pos = end;
        const auto index = e.contains("index") ? e.at("index").to_number<std::size_t>() : 0;
        if (e.at("type") == "content_block_start") {
            EXPECT_EQ(index, blocks.size());
            blocks.push_back(e.at("content_block"));
            continue;
        }
        if (e.at("type") == "content_block_stop") {
            if (partial_json.contains(index)) {
                blocks.at(index).as_object()["input"] = json::parse(partial_json[index]);
            }
            continue;
        }
        const auto& d = e.at("delta").as_object();
        auto& b = blocks.at(index).as_object();
        if (d.at("type") == "thinking_delta") {
            b["thinking"].as_string().append(d.at("thinking").as_string());
        } else if (d.at("type") == "text_delta") {
            b["text"].as_string().append(d.at("text").as_string());
        } else if (d.at("type") == "input_json_delta") {
            partial_json[index] += std::string(d.at("partial_json").as_string());
        }
    }
    return blocks;
}

TEST(anthropic_response, reasoning_and_calls_become_thinking_and_tool_use_blocks_whole_and_streamed) {
    const auto req = parse(R"({"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"}],)"
                           R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}}]})");
    choice_output out(req.chat, hermes_reading(), tiny_vocab());
    message_blocks blocks;
    const std::string events =
        feed(out, blocks,
             "<think>Need the weather.</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", "
             "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
             "\"arguments\": {\"city\": \"Rome\"}}\n</tool_call>");
    const auto& content = blocks.content();
    ASSERT_EQ(content.size(), 4u) << json::serialize(content);
    EXPECT_EQ(content.at(0), json::parse(R"({"type":"thinking","thinking":"Need the weather.","signature":""})"));
    EXPECT_EQ(content.at(1).at("type"), "text");
    EXPECT_EQ(content.at(1).at("text").as_string().subview().substr(0, 13), "Let me check.");
    for (std::size_t i = 2; i < 4; ++i) {
        const auto& b = content.at(i).as_object();
        EXPECT_EQ(b.at("type"), "tool_use");
        EXPECT_TRUE(b.at("id").as_string().starts_with("toolu_")) << b.at("id");
        EXPECT_EQ(b.at("name"), "get_weather");
        EXPECT_EQ(b.at("input").at("city"), i == 2 ? "Paris" : "Rome");
    }
    EXPECT_NE(content.at(2).at("id"), content.at(3).at("id"));
    EXPECT_TRUE(blocks.called());
    EXPECT_EQ(json::value(rebuild(events)), json::value(content)) << events;
    EXPECT_NE(events.find("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                          "\"delta\":{\"type\":\"signature_delta\""),
              std::string::npos)
        << events;
    generation_summary s;
    EXPECT_EQ(anthropic_stop_reason(s, blocks.called(), {}), "tool_use");
}

TEST(anthropic_response, stop_reasons_follow_how_the_generation_ended) {
    generation_summary s;
    EXPECT_EQ(anthropic_stop_reason(s, false, {"END"}), "end_turn");
    s.stopped_by = "END";
    EXPECT_EQ(anthropic_stop_reason(s, false, {"END"}), "stop_sequence");
    EXPECT_EQ(anthropic_stop_reason(s, false, {}), "end_turn") << "a stop string the client did not send";
    s.reason = finish_reason::length;
    EXPECT_EQ(anthropic_stop_reason(s, true, {}), "max_tokens");
    s.reason = finish_reason::context_full;
    EXPECT_EQ(anthropic_stop_reason(s, false, {}), "max_tokens");
}

TEST(anthropic_response, errors_take_anthropic_types_and_overloaded_is_529) {
    const auto busy = anthropic_error_response(shutdown_error(), 11, false);
    EXPECT_EQ(busy.result_int(), 529u);
    EXPECT_EQ(busy[boost::beast::http::field::retry_after], "1");
    EXPECT_EQ(json::parse(busy.body()).at("error").at("type"), "overloaded_error");
    const api_error internal{boost::beast::http::status::internal_server_error, "boom", "server_error"};
    EXPECT_EQ(json::parse(anthropic_error_response(internal, 11, true).body()),
              json::parse(R"({"type":"error","error":{"type":"api_error","message":"boom"}})"));
    EXPECT_EQ(anthropic_error_type(bad_request("x")), "invalid_request_error");
}

} // namespace
} // namespace sluice::server
