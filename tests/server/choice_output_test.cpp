// The server's side of tool calls, in process: generated text read with the Qwen3/Hermes syntax through
// server/choice_output becomes message.tool_calls (ids, names, JSON arguments), streamed delta.tool_calls chunks
// as OpenAI sends them and finish_reason "tool_calls"; malformed calls stay content; parallel_tool_calls false
// keeps the first call. (The tiny model cannot be made to emit a call, so its text is fed as token events.)
#include "runtime/chat/output_parser.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "server/choice_output.hpp"
#include "server/openai_response.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

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

completion_request tools_request(bool parallel) {
    const std::string body =
        std::string(R"({"messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":)") +
        (parallel ? "true" : "false") +
        R"(,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
        R"("properties":{"city":{"type":"string"}}}}}]})";
    auto r = parse_completion_request(body, completion_kind::chat, 1);
    EXPECT_TRUE(r) << r.error().message;
    return std::move(*r);
}

output_reading hermes_reading() {
    output_reading r;
    r.syntax.tools = chat::tool_format::hermes;
    r.syntax.think_tags = true;
    return r;
}

const response_meta meta{completion_kind::chat, "chatcmpl-test", "tiny", 0, false};

/// Feeds `text` three bytes at a time as text-only events; returns the streamed chunks and the final output.
std::vector<json::object> feed(choice_output& out, std::string_view text) {
    std::vector<json::object> chunks;
    for (std::size_t i = 0; i < text.size(); i += 3) {
        token_event ev;
        ev.text = std::string(text.substr(i, 3));
        for (auto& c : delta_chunks(meta, 0, out.on_event(ev))) {
            chunks.push_back(std::move(c));
        }
    }
    for (auto& c : delta_chunks(meta, 0, out.finish())) {
        chunks.push_back(std::move(c));
    }
    return chunks;
}

constexpr std::string_view two_calls =
    "<think>Need the weather.</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n"
    "</tool_call>";

TEST(choice_output, calls_become_tool_calls_whole_and_streamed_with_finish_reason_tool_calls) {
    const auto req = tools_request(true);
    choice_output out(req, hermes_reading(), tiny_vocab());
    const auto chunks = feed(out, two_calls);

    generation_summary s;
    s.reason = finish_reason::stop;
    EXPECT_EQ(choice_finish_reason(s, out), "tool_calls");
    s.reason = finish_reason::length;
    EXPECT_EQ(choice_finish_reason(s, out), "length");
    s.reason = finish_reason::stop;

    const finished_choice fc{&out, "tool_calls"};
    const auto whole = full_response(meta, std::span(&fc, 1), s);
    const auto& m = whole.at("choices").at(0).at("message").as_object();
    EXPECT_TRUE(m.at("content").is_null());
    EXPECT_EQ(m.at("reasoning_content").as_string(), "Need the weather.");
    const auto& calls = m.at("tool_calls").as_array();
    ASSERT_EQ(calls.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& c = calls.at(i).as_object();
        EXPECT_TRUE(c.at("id").as_string().starts_with("call_"));
        EXPECT_EQ(c.at("type").as_string(), "function");
        EXPECT_EQ(c.at("function").at("name").as_string(), "get_weather");
        const auto args = json::parse(c.at("function").at("arguments").as_string());
        EXPECT_EQ(args.at("city").as_string(), i == 0 ? "Paris" : "Rome");
    }
    EXPECT_NE(calls.at(0).at("id"), calls.at(1).at("id"));

    // Streamed: reasoning deltas, then per call a head (index, id, type, name, "" arguments) and its arguments.
    std::string reasoning;
    std::vector<json::object> call_parts;
    for (const auto& chunk : chunks) {
        const auto& d = chunk.at("choices").at(0).at("delta").as_object();
        if (const auto* r = d.if_contains("reasoning_content")) {
            reasoning += std::string(r->as_string());
        }
        EXPECT_FALSE(d.contains("content")) << json::serialize(chunk);
        if (const auto* t = d.if_contains("tool_calls")) {
            ASSERT_EQ(t->as_array().size(), 1u);
            call_parts.push_back(t->as_array().at(0).as_object());
        }
    }
    EXPECT_EQ(reasoning, "Need the weather.");
    ASSERT_EQ(call_parts.size(), 4u);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& head = call_parts.at(2 * i);
        const auto& args = call_parts.at(2 * i + 1);
        EXPECT_EQ(head.at("index").to_number<std::size_t>(), i);
        EXPECT_EQ(head.at("id"), calls.at(i).at("id"));
        EXPECT_EQ(head.at("type").as_string(), "function");
        EXPECT_EQ(head.at("function").at("name").as_string(), "get_weather");
        EXPECT_EQ(head.at("function").at("arguments").as_string(), "");
        EXPECT_EQ(args.at("index").to_number<std::size_t>(), i);
        EXPECT_FALSE(args.contains("id"));
        EXPECT_EQ(args.at("function").at("arguments"), calls.at(i).at("function").at("arguments"));
    }
}

TEST(choice_output, parallel_tool_calls_false_keeps_the_first_call) {
    const auto req = tools_request(false);
    choice_output out(req, hermes_reading(), tiny_vocab());
    feed(out, two_calls);
    ASSERT_EQ(out.calls().size(), 1u);
    EXPECT_NE(out.calls().at(0).arguments.find("Paris"), std::string::npos);
}

TEST(choice_output, a_malformed_call_is_returned_as_content_and_finishes_as_stop) {
    const auto req = tools_request(true);
    choice_output out(req, hermes_reading(), tiny_vocab());
    const std::string_view bad = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \n</tool_call>";
    const auto chunks = feed(out, bad);
    EXPECT_TRUE(out.calls().empty());
    EXPECT_NE(out.content().find("get_weather"), std::string::npos) << out.content();
    std::string streamed;
    for (const auto& chunk : chunks) {
        const auto& d = chunk.at("choices").at(0).at("delta").as_object();
        EXPECT_FALSE(d.contains("tool_calls"));
        if (const auto* c = d.if_contains("content")) {
            streamed += std::string(c->as_string());
        }
    }
    EXPECT_EQ(streamed, out.content());
    generation_summary s;
    s.reason = finish_reason::stop;
    EXPECT_EQ(choice_finish_reason(s, out), "stop");
}

TEST(choice_output, without_tools_a_call_shaped_text_is_content) {
    auto req = tools_request(true);
    req.parse_tool_calls = false; // what tool_choice "none" (or no tools) gives
    output_reading reading = hermes_reading();
    reading.syntax.tools = chat::tool_format::none;
    choice_output out(req, reading, tiny_vocab());
    feed(out, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>");
    EXPECT_TRUE(out.calls().empty());
    EXPECT_NE(out.content().find("<tool_call>"), std::string::npos);
}

} // namespace
} // namespace sluice::server
