// `tools` of a chat request reach the model's chat template end to end: a tiny model whose template lists the
// tools' names gets a longer prompt with tools than without, and `tool_choice: "none"` leaves them out.
#include "../cli/process.hpp"
#include "../cli/scratch.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace sluice::test {
namespace {

/// ChatML with a system turn naming the tools, when there are any.
constexpr std::string_view tools_template =
    "{% if tools %}<|im_start|>system\nTools:{% for t in tools %} {{ t.function.name }}{% endfor %}<|im_end|>\n"
    "{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::filesystem::path tools_model() {
    return tiny_model_with_template("tools", tools_template);
}

/// prompt_tokens of a one-token chat completion with `extra` fields.
std::int64_t prompt_tokens(unsigned short port, const std::string& extra) {
    const auto r =
        post_json(port, "/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":1)" + extra + "}");
    EXPECT_EQ(r.status, 200) << r.body;
    return body_json(r).at("usage").at("prompt_tokens").as_int64();
}

TEST(chat_tools, tools_are_rendered_by_the_chat_template_and_tool_choice_none_leaves_them_out) {
    server_process server({}, tools_model());
    const std::string tools = R"(,"tools":[{"type":"function","function":{"name":"get_weather","parameters":)"
                              R"({"type":"object","properties":{"city":{"type":"string"}}}}}])";
    const auto plain = prompt_tokens(server.port(), "");
    const auto with_tools = prompt_tokens(server.port(), tools);
    // Exactly the system turn the template adds: its tokens, counted by the server's own tokenizer.
    const auto turn =
        post_json(server.port(), "/tokenize", R"({"content":"<|im_start|>system\nTools: get_weather<|im_end|>\n"})");
    ASSERT_EQ(turn.status, 200) << turn.body;
    EXPECT_EQ(with_tools - plain, static_cast<std::int64_t>(body_json(turn).at("tokens").as_array().size()));
    EXPECT_EQ(prompt_tokens(server.port(), tools + R"(,"tool_choice":"none")"), plain);
    EXPECT_EQ(prompt_tokens(server.port(), tools + R"(,"tool_choice":"auto")"), with_tools);
}

} // namespace
} // namespace sluice::test
