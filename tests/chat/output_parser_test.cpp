// The output parser on text shaped exactly as each real chat template renders an assistant's tool calls and
// reasoning (the template renders the conversation; the assistant's turn is what the model would generate),
// whole and streamed one byte at a time; plus malformed calls, reasoning split and harmony channels.
#include "runtime/chat/chat_template.hpp"
#include "runtime/chat/output_parser.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace json = boost::json;
using namespace sluice::chat;

std::string read_template(const std::string& name) {
    std::ifstream in(std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures/chat-templates" / name, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const json::array tools = json::parse(R"([
  {"type":"function","function":{"name":"get_weather","description":"Weather of a city",
   "parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}},
  {"type":"function","function":{"name":"get_time","description":"Local time",
   "parameters":{"type":"object","properties":{"zone":{"type":"string"}}}}}])")
                              .as_array();

/// One real template: the format it must be detected as, how its assistant turn ends (the end-of-turn text the
/// engine stops at, not part of the generated text), and how many calls it can write in one turn.
struct format_case {
    std::string file;
    tool_format format;
    std::string turn_end;
    int calls = 2;
    std::string eos = "</s>";
};

void PrintTo(const format_case& c, std::ostream* os) {
    *os << c.file;
}

const format_case format_cases[] = {
    {"Qwen-Qwen3-0.6B.jinja", tool_format::hermes, "<|im_end|>\n"},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", tool_format::hermes, "<|im_end|>\n"},
    {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", tool_format::hermes, "<|im_end|>\n"},
    {"Qwen3.5-4B.jinja", tool_format::qwen3_coder, "<|im_end|>\n"},
    {"GLM-4.7-Flash.jinja", tool_format::glm45, ""},
    // This template renders the calls' turn, then the same message's (empty) content as a turn of its own.
    {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", tool_format::deepseek_v3,
     "<｜end▁of▁sentence｜><｜Assistant｜><｜end▁of▁sentence｜>", 2, "<｜end▁of▁sentence｜>"},
    {"Kimi-K2-Instruct.jinja", tool_format::kimi_k2, "<|im_end|>"},
    {"Kimi-K2-Thinking.jinja", tool_format::kimi_k2, "<|im_end|>"},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", tool_format::llama3, "<|eot_id|>", 1},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", tool_format::llama3, "<|eot_id|>", 1},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", tool_format::mistral, "</s>"},
    {"unsloth-mistral-Devstral-Small-2507.jinja", tool_format::mistral, "</s>"},
    {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", tool_format::mistral, "</s>"},
    {"openai-gpt-oss-120b.jinja", tool_format::harmony, "<|call|>", 1},
};

json::array conversation(int calls, bool with_assistant) {
    json::array m = json::parse(R"([{"role":"user","content":"Weather in Paris for 3 days, and the time?"}])")
                        .as_array();
    if (with_assistant) {
        json::array tc = json::parse(R"([
          {"id":"call00001","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","days":3}}},
          {"id":"call00002","type":"function","function":{"name":"get_time","arguments":{"zone":"Europe/Paris"}}}])")
                             .as_array();
        tc.resize(static_cast<std::size_t>(calls));
        m.push_back(json::object{{"role", "assistant"}, {"content", ""}, {"tool_calls", tc}});
    }
    return m;
}

/// The template's text, with Kimi-K2's `list.append` (refused by the immutable sandbox, as jinja2's is; it only
/// queues ids for later tool messages) left out so the assistant turn renders as the template writes it.
std::string usable_template(const std::string& file) {
    std::string t = read_template(file);
    for (const std::string_view append : {"{%- set _ = tool_response_queue.ids.append(formatted_id) -%}"}) {
        if (const auto at = t.find(append); at != std::string::npos) {
            t.erase(at, append.size());
        }
    }
    return t;
}

/// A rendered generation prompt and what the model generates after it for the assistant turn with tool calls,
/// as the template renders that turn. Where the template renders a past turn differently from its generation
/// prompt (GLM opens <think> in the prompt; a past turn shows only </think>), the turn starts after the last
/// tag or line the two share.
struct rendered_turn {
    std::string prompt;
    std::string turn;
};

rendered_turn generated_turn(const format_case& c, const std::string& tmpl) {
    chat_inputs in;
    in.tools = tools;
    in.bos_token = "<s>";
    in.eos_token = c.eos;
    in.messages = conversation(c.calls, false);
    in.add_generation_prompt = true;
    auto prompt = render_chat(tmpl, in);
    EXPECT_TRUE(prompt) << prompt.error().message;
    in.messages = conversation(c.calls, true);
    in.add_generation_prompt = false;
    auto full = render_chat(tmpl, in);
    EXPECT_TRUE(full) << full.error().message;
    if (!prompt || !full) {
        return {};
    }
    std::size_t shared = 0;
    while (shared < prompt->size() && shared < full->size() && (*prompt)[shared] == (*full)[shared]) {
        ++shared;
    }
    if (shared < prompt->size()) {
        while (shared > 0 && (*full)[shared - 1] != '>' && (*full)[shared - 1] != '\n') {
            --shared;
        }
    }
    std::string turn = full->substr(shared);
    while (!turn.empty() && turn.back() == '\n' && !c.turn_end.ends_with('\n')) {
        turn.pop_back();
    }
    EXPECT_TRUE(turn.ends_with(c.turn_end)) << turn;
    turn.resize(turn.size() - std::min(turn.size(), c.turn_end.size()));
    return {*prompt, turn};
}

/// The syntax as the server reads it: the template's format, and whether the prompt leaves <think> open.
output_syntax syntax_of(const std::string& tmpl, std::string prompt) {
    while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' ')) {
        prompt.pop_back();
    }
    const bool thinks = template_thinks(tmpl);
    return output_syntax{detect_tool_format(tmpl), thinks, thinks && prompt.ends_with("<think>")};
}

/// push() one byte at a time, then finish(), concatenated.
output_delta streamed(std::string_view text, output_syntax syntax) {
    output_parser p(syntax, tools);
    output_delta all;
    auto add = [&all](output_delta d) {
        all.reasoning += d.reasoning;
        all.content += d.content;
        for (auto& c : d.calls) {
            all.calls.push_back(std::move(c));
        }
    };
    for (const char ch : text) {
        add(p.push(std::string_view(&ch, 1)));
    }
    add(p.finish());
    return all;
}

void expect_weather_calls(const output_delta& d, int calls, const std::string& text) {
    ASSERT_EQ(d.calls.size(), static_cast<std::size_t>(calls)) << text << "\ncontent: " << d.content;
    EXPECT_EQ(d.calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(d.calls[0].arguments), json::parse(R"({"city":"Paris","days":3})")) << d.calls[0].arguments;
    if (calls > 1) {
        EXPECT_EQ(d.calls[1].name, "get_time");
        EXPECT_EQ(json::parse(d.calls[1].arguments), json::parse(R"({"zone":"Europe/Paris"})"));
    }
    const auto blank = d.content.find_first_not_of(" \n") == std::string::npos;
    EXPECT_TRUE(blank) << "content: [" << d.content << "] from\n" << text;
}

class real_template : public testing::TestWithParam<format_case> {};

TEST_P(real_template, detects_its_format_and_parses_the_calls_it_renders_whole_and_streamed) {
    const auto& c = GetParam();
    const std::string tmpl = usable_template(c.file);
    ASSERT_FALSE(tmpl.empty()) << c.file;
    const auto [prompt, turn] = generated_turn(c, tmpl);
    ASSERT_FALSE(turn.empty());
    const auto syntax = syntax_of(tmpl, prompt);
    EXPECT_EQ(to_string(syntax.tools), to_string(c.format));
    expect_weather_calls(parse_output(turn, syntax, tools), c.calls, turn);
    expect_weather_calls(streamed(turn, syntax), c.calls, turn);
}

INSTANTIATE_TEST_SUITE_P(formats, real_template, testing::ValuesIn(format_cases));

const output_syntax hermes{tool_format::hermes, true, false};

TEST(output_parser, a_malformed_call_is_content_never_an_error) {
    const std::string bad = "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
    const auto d = parse_output(bad, hermes, tools);
    EXPECT_TRUE(d.calls.empty());
    EXPECT_EQ(d.content, bad);
    EXPECT_EQ(streamed(bad, hermes).content, bad);
}

TEST(output_parser, an_unclosed_call_at_the_end_is_content) {
    const std::string cut = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
    EXPECT_EQ(parse_output(cut, hermes, tools).content, cut);
    EXPECT_TRUE(parse_output(cut, hermes, tools).calls.empty());
}

TEST(output_parser, think_blocks_go_to_reasoning_and_the_answer_to_content) {
    const std::string text = "<think>\nThe user greets me.\n</think>\n\nHello! <b>bold</b>";
    const auto d = parse_output(text, hermes, tools);
    EXPECT_EQ(d.reasoning, "The user greets me.");
    EXPECT_EQ(d.content, "Hello! <b>bold</b>");
    const auto s = streamed(text, hermes);
    EXPECT_EQ(s.reasoning, d.reasoning);
    EXPECT_EQ(s.content, d.content);
}

TEST(output_parser, a_prompt_that_opens_think_starts_the_output_in_reasoning) {
    const output_syntax opened{tool_format::none, true, true};
    const std::string text = "\nstep one\nstep two\n</think>\n\nThe answer is 4.";
    const auto d = parse_output(text, opened);
    EXPECT_EQ(d.reasoning, "step one\nstep two");
    EXPECT_EQ(d.content, "The answer is 4.");
    EXPECT_EQ(streamed(text, opened).reasoning, d.reasoning);
    const auto unfinished = parse_output("still thinking", opened);
    EXPECT_EQ(unfinished.reasoning, "still thinking");
    EXPECT_EQ(unfinished.content, "");
}

TEST(output_parser, reasoning_then_a_call_qwen3_style) {
    const std::string text = "<think>\nI need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
                             "\"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>";
    const auto d = parse_output(text, hermes, tools);
    EXPECT_EQ(d.reasoning, "I need the weather.");
    expect_weather_calls(d, 1, text);
}

TEST(output_parser, text_without_reasoning_or_tools_passes_through_unchanged) {
    const std::string text = "  <tool_call> is a tag; <think> too.\n";
    EXPECT_EQ(parse_output(text, output_syntax{}).content, text);
    EXPECT_EQ(streamed(text, output_syntax{}).content, text);
}

TEST(output_parser, xml_values_follow_the_schema_types) {
    const std::string text = "<tool_call>\n<function=get_weather>\n<parameter=city>\n123\n</parameter>\n"
                             "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    const auto d = parse_output(text, output_syntax{tool_format::qwen3_coder, true, false}, tools);
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(json::parse(d.calls[0].arguments), json::parse(R"({"city":"123","days":3})"));
}

TEST(output_parser, harmony_analysis_is_reasoning_final_is_content) {
    const output_syntax harmony{tool_format::harmony, false, false};
    const std::string text = "<|channel|>analysis<|message|>User says hi.<|end|><|start|>assistant<|channel|>final"
                             "<|message|>Hello there.";
    const auto d = parse_output(text, harmony);
    EXPECT_EQ(d.reasoning, "User says hi.");
    EXPECT_EQ(d.content, "Hello there.");
    const auto s = streamed(text, harmony);
    EXPECT_EQ(s.reasoning, d.reasoning);
    EXPECT_EQ(s.content, d.content);
}

TEST(output_parser, harmony_commentary_to_a_function_is_a_call_after_analysis) {
    const output_syntax harmony{tool_format::harmony, false, false};
    const std::string text = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
                             "commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\","
                             "\"days\":3}";
    const auto d = parse_output(text, harmony, tools);
    EXPECT_EQ(d.reasoning, "Need weather.");
    expect_weather_calls(d, 1, text);
}

TEST(output_parser, llama3_json_is_a_call_only_as_the_whole_answer) {
    const output_syntax llama{tool_format::llama3, false, false};
    const std::string prose = "Use {\"name\": \"get_weather\", \"parameters\": {}} like this.";
    const auto d = parse_output(prose, llama, tools);
    EXPECT_TRUE(d.calls.empty());
    EXPECT_EQ(d.content, prose);
    const std::string not_a_call = "{\"answer\": 4}";
    EXPECT_EQ(parse_output(not_a_call, llama, tools).content, not_a_call);
}

} // namespace
