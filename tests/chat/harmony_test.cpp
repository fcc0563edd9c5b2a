// gpt-oss's harmony chat template, rendered by sluice::chat over the cases harmony_render.py renders with jinja2:
// reasoning effort, model identity, built-in tools, TypeScript tool namespaces, analysis messages kept or dropped
// around tool calls, the training-style <|return|>, and the template's own errors. Byte-for-byte equal.
#include "runtime/chat/chat_template.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace json = boost::json;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(harmony_template, renders_every_case_as_jinja2_does) {
    const std::string text = read_file(HARMONY_EXPECTED_JSON);
    ASSERT_FALSE(text.empty()) << "missing " << HARMONY_EXPECTED_JSON << ": run the chat_harmony_render test";
    const auto doc = json::parse(text).as_object();
    const std::string source =
        read_file(std::string(SLUICE_SHARED_DIR) + "/fixtures/chat-templates/openai-gpt-oss-120b.jinja");
    ASSERT_FALSE(source.empty());
    sluice::chat::template_options options;
    options.fixed_time = static_cast<std::time_t>(doc.at("fixed_time").as_int64());
    std::size_t rendered = 0, refused = 0;
    for (const auto& cv : doc.at("cases").as_array()) {
        const auto& c = cv.as_object();
        const std::string name(c.at("name").as_string());
        sluice::chat::chat_inputs in;
        in.messages = c.at("messages").as_array();
        in.tools = c.at("tools");
        in.kwargs = c.at("kwargs").as_object();
        in.add_generation_prompt = c.at("add_generation_prompt").as_bool();
        in.bos_token = std::string(doc.at("bos_token").as_string());
        in.eos_token = std::string(doc.at("eos_token").as_string());
        auto got = sluice::chat::render_chat(source, in, options);
        if (const auto* err = c.if_contains("error")) {
            ASSERT_FALSE(got) << name << ": jinja2 raised but sluice rendered\n" << *got;
            EXPECT_EQ(got.error().message,
                      std::string(err->at("type").as_string()) + ": " + std::string(err->at("message").as_string()))
                << name;
            ++refused;
            continue;
        }
        ASSERT_TRUE(got) << name << ": " << got.error().message;
        EXPECT_EQ(*got, std::string(c.at("output").as_string())) << name;
        ++rendered;
    }
    EXPECT_GE(rendered, 15u);
    EXPECT_GE(refused, 4u);
}

} // namespace
