// What a chat or completion choice carries besides text, over real sockets against `sluice serve` on the tiny
// model: logprobs with top_logprobs and token bytes (whole and streamed, which must agree), n > 1 choices,
// reasoning split from content by a template that opens <think>, chat_template_kwargs reaching the template, and
// a previous turn's reasoning_content and tool calls accepted in the history (tool_choice that forces a call is in
// structured_output_test).
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace sluice::test {
namespace {

namespace json = boost::json;

/// ChatML whose generation prompt opens <think> unless enable_thinking is false (Qwen3's switch).
constexpr std::string_view thinking_template =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}";

const std::string hello = R"("messages":[{"role":"user","content":"Hello"}])";

/// The JSON payloads of an SSE body, [DONE] left out.
std::vector<json::object> sse_payloads(const std::string& body) {
    std::vector<json::object> out;
    std::size_t pos = 0;
    while ((pos = body.find("data: {", pos)) != std::string::npos) {
        const auto end = body.find("\n\n", pos);
        out.push_back(json::parse(body.substr(pos + 6, end - pos - 6)).as_object());
        pos = end;
    }
    return out;
}

void expect_entry_shape(const json::object& e, std::size_t top) {
    ASSERT_TRUE(e.at("token").is_string());
    EXPECT_LE(e.at("logprob").to_number<double>(), 0.0);
    EXPECT_TRUE(e.at("bytes").is_array());
    const auto& alts = e.at("top_logprobs").as_array();
    ASSERT_EQ(alts.size(), top);
    double previous = 1.0;
    for (const auto& a : alts) {
        const double lp = a.at("logprob").to_number<double>();
        EXPECT_LE(lp, previous) << "top_logprobs sorted, most likely first";
        previous = lp;
        std::string bytes;
        for (const auto& b : a.at("bytes").as_array()) {
            bytes += static_cast<char>(b.as_int64());
        }
        EXPECT_FALSE(bytes.empty());
    }
}

TEST(chat_output, logprobs_whole_and_streamed_agree_with_top_alternatives_and_bytes) {
    server_process server;
    const std::string body = "{" + hello + R"(,"max_tokens":6,"ignore_eos":true,"seed":7,"logprobs":true,)"
                                           R"("top_logprobs":3)";
    const auto whole = post_json(server.port(), "/v1/chat/completions", body + "}");
    ASSERT_EQ(whole.status, 200) << whole.body;
    const auto whole_doc = body_json(whole);
    const auto& choice = whole_doc.at("choices").at(0).as_object();
    const auto& entries = choice.at("logprobs").at("content").as_array();
    ASSERT_EQ(entries.size(), 6u);
    for (const auto& e : entries) {
        expect_entry_shape(e.as_object(), 3);
    }

    const auto streamed = post_json(server.port(), "/v1/chat/completions", body + R"(,"stream":true})");
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    json::array streamed_entries;
    for (const auto& chunk : sse_payloads(streamed.body)) {
        const auto& c = chunk.at("choices").at(0).as_object();
        if (c.at("logprobs").is_object()) {
            for (const auto& e : c.at("logprobs").at("content").as_array()) {
                streamed_entries.push_back(e);
            }
        }
    }
    EXPECT_EQ(json::serialize(streamed_entries), json::serialize(entries));
}

TEST(chat_output, top_logprobs_above_twenty_or_without_logprobs_is_a_400) {
    server_process server;
    auto r = post_json(server.port(), "/v1/chat/completions",
                       "{" + hello + R"(,"logprobs":true,"top_logprobs":21})");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(openai_error_problem(r), "");
    r = post_json(server.port(), "/v1/chat/completions", "{" + hello + R"(,"top_logprobs":2})");
    EXPECT_EQ(r.status, 400) << r.body;
}

TEST(chat_output, completions_logprobs_offsets_follow_the_text) {
    server_process server;
    const auto r = post_json(server.port(), "/v1/completions",
                             R"({"prompt":"Once upon","max_tokens":5,"ignore_eos":true,"logprobs":2,"seed":3})");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto doc = body_json(r);
    const auto& c = doc.at("choices").at(0).as_object();
    const auto& lp = c.at("logprobs").as_object();
    const auto& tokens = lp.at("tokens").as_array();
    const auto& offsets = lp.at("text_offset").as_array();
    ASSERT_EQ(tokens.size(), 5u);
    ASSERT_EQ(offsets.size(), 5u);
    ASSERT_EQ(lp.at("token_logprobs").as_array().size(), 5u);
    EXPECT_EQ(offsets.at(0).to_number<std::int64_t>(), 0);
    for (std::size_t i = 1; i < offsets.size(); ++i) {
        EXPECT_GE(offsets.at(i).to_number<std::int64_t>(), offsets.at(i - 1).to_number<std::int64_t>());
    }
    for (const auto& top : lp.at("top_logprobs").as_array()) {
        EXPECT_LE(top.as_object().size(), 2u); // two alternatives (fewer when their texts coincide)
        EXPECT_GE(top.as_object().size(), 1u);
    }
}

TEST(chat_output, n_choices_come_back_indexed_whole_and_streamed) {
    server_process server;
    const std::string body = "{" + hello + R"(,"max_tokens":4,"ignore_eos":true,"seed":5,"n":3)";
    const auto whole = post_json(server.port(), "/v1/chat/completions", body + "}");
    ASSERT_EQ(whole.status, 200) << whole.body;
    const auto doc = body_json(whole);
    const auto& choices = doc.at("choices").as_array();
    ASSERT_EQ(choices.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(choices.at(i).at("index").to_number<std::size_t>(), i);
        EXPECT_EQ(choices.at(i).at("finish_reason").as_string(), "length");
    }
    EXPECT_EQ(doc.at("usage").at("completion_tokens").as_int64(), 12);

    const auto streamed = post_json(server.port(), "/v1/chat/completions", body + R"(,"stream":true})");
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::map<std::size_t, std::string> texts;
    std::map<std::size_t, std::string> finishes;
    for (const auto& chunk : sse_payloads(streamed.body)) {
        for (const auto& c : chunk.at("choices").as_array()) {
            const auto i = c.at("index").to_number<std::size_t>();
            if (const auto* t = c.at("delta").as_object().if_contains("content")) {
                texts[i] += std::string(t->as_string());
            }
            if (c.at("finish_reason").is_string()) {
                finishes[i] = std::string(c.at("finish_reason").as_string());
            }
        }
    }
    ASSERT_EQ(finishes.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(finishes[i], "length");
        // Same seeds as the whole answer: the same texts.
        EXPECT_EQ(texts[i], std::string(choices.at(i).at("message").at("content").as_string())) << i;
    }
}

TEST(chat_output, thinking_goes_to_reasoning_content_and_enable_thinking_false_reaches_the_template) {
    server_process server({}, tiny_model_with_template("thinking", thinking_template));
    const std::string body = "{" + hello + R"(,"max_tokens":5,"ignore_eos":true,"seed":2)";
    const auto thinking = post_json(server.port(), "/v1/chat/completions", body + "}");
    ASSERT_EQ(thinking.status, 200) << thinking.body;
    const auto thinking_doc = body_json(thinking);
    const auto& m = thinking_doc.at("choices").at(0).at("message").as_object();
    // The prompt ends inside <think>: what the model says is reasoning (the tiny model never closes it).
    ASSERT_TRUE(m.contains("reasoning_content")) << thinking.body;
    EXPECT_FALSE(m.at("reasoning_content").as_string().empty());
    EXPECT_EQ(m.at("content").as_string(), "");

    const auto streamed = post_json(server.port(), "/v1/chat/completions", body + R"(,"stream":true})");
    ASSERT_EQ(streamed.status, 200);
    std::string reasoning;
    for (const auto& chunk : sse_payloads(streamed.body)) {
        const auto& d = chunk.at("choices").at(0).at("delta").as_object();
        if (const auto* r = d.if_contains("reasoning_content")) {
            reasoning += std::string(r->as_string());
        }
        if (const auto* c = d.if_contains("content")) {
            EXPECT_EQ(c->as_string(), "");
        }
    }
    EXPECT_EQ(reasoning, std::string(m.at("reasoning_content").as_string()));

    const auto off = post_json(server.port(), "/v1/chat/completions",
                               body + R"(,"chat_template_kwargs":{"enable_thinking":false}})");
    ASSERT_EQ(off.status, 200) << off.body;
    const auto off_doc = body_json(off);
    const auto& plain = off_doc.at("choices").at(0).at("message").as_object();
    EXPECT_FALSE(plain.contains("reasoning_content")) << off.body;
    EXPECT_FALSE(plain.at("content").as_string().empty());
    // The closed think block is in the prompt: more prompt tokens than the open one.
    EXPECT_GT(body_json(off).at("usage").at("prompt_tokens").as_int64(),
              body_json(thinking).at("usage").at("prompt_tokens").as_int64());
}

TEST(chat_output, history_with_reasoning_and_tool_calls_is_accepted) {
    server_process server;
    const auto r = post_json(
        server.port(), "/v1/chat/completions",
        R"({"messages":[{"role":"user","content":"Weather?"},)"
        R"({"role":"assistant","content":null,"reasoning_content":"Ask the tool.","tool_calls":[{"id":"call_1",)"
        R"("type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
        R"({"role":"tool","tool_call_id":"call_1","content":"sunny"}],"max_tokens":2,"reasoning_effort":"low",)"
        R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],)"
        R"("parallel_tool_calls":false})");
    EXPECT_EQ(r.status, 200) << r.body;
}

} // namespace
} // namespace sluice::test
