// Loading a model's chat template and special tokens from tokenizer_config.json, .jinja and GGUF files.
#include "runtime/chat/chat_template.hpp"
#include "runtime/gguf/encode.hpp"
#include "runtime/gguf/metadata.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using sluice::chat::load_template_source;

// A scratch file under the build tree, removed when the test ends.
class scratch_file {
public:
    scratch_file(const std::string& name, const std::string& bytes)
        : path_(fs::path(SLUICE_BINARY_DIR) / "tests/chat/scratch" / name) {
        fs::create_directories(path_.parent_path());
        std::ofstream(path_, std::ios::binary) << bytes;
    }
    ~scratch_file() { fs::remove(path_); }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

TEST(template_source, tokenizer_config_gives_template_and_special_tokens) {
    scratch_file f("tokenizer_config.json",
                   R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "chat_template": )"
                   R"("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"})");
    auto source = load_template_source(f.path());
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(source->bos_token, "<s>");
    EXPECT_EQ(source->eos_token, "</s>");
    sluice::chat::chat_inputs in;
    in.messages = boost::json::array{boost::json::object{{"role", "user"}, {"content", "hi"}}};
    in.bos_token = source->bos_token;
    in.eos_token = source->eos_token;
    auto prompt = sluice::chat::render_chat(source->text, in);
    ASSERT_TRUE(prompt) << prompt.error().message;
    EXPECT_EQ(*prompt, "<s>hi</s>");
}

TEST(template_source, named_template_list_prefers_default) {
    scratch_file f(
        "named_tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
    auto source = load_template_source(f.path());
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(source->text, "D");
}

TEST(template_source, missing_template_and_bad_json_are_errors) {
    scratch_file none("no_template.json", R"({"eos_token": "</s>"})");
    auto a = load_template_source(none.path());
    ASSERT_FALSE(a);
    EXPECT_NE(a.error().message.find("no chat_template key"), std::string::npos) << a.error().message;
    scratch_file bad("bad.json", "{not json");
    auto b = load_template_source(bad.path());
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("invalid JSON"), std::string::npos) << b.error().message;
    auto c = load_template_source("/nonexistent/tokenizer_config.json");
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().message.find("cannot open"), std::string::npos) << c.error().message;
}

TEST(template_source, jinja_file_is_the_template_text) {
    scratch_file f("t.jinja", "{{ 'x' }}\n");
    auto source = load_template_source(f.path());
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(source->text, "{{ 'x' }}\n");
}

TEST(template_source, gguf_metadata_gives_template_and_special_tokens) {
    sluice::gguf::metadata kv;
    kv.set_string("general.architecture", "llama");
    kv.set_string(sluice::gguf::keys::chat_template, "{{ bos_token }}[{{ messages[0].content }}]");
    kv.set_array(sluice::gguf::keys::tokenizer_tokens, std::vector<std::string>{"<unk>", "<s>", "</s>", "a"});
    kv.set_u32(sluice::gguf::keys::tokenizer_bos_id, 1);
    kv.set_u32(sluice::gguf::keys::tokenizer_eos_id, 2);
    std::vector<std::byte> bytes = sluice::gguf::encode_header(kv, {}, 32);
    scratch_file f("model.gguf", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    auto source = load_template_source(f.path());
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(source->text, "{{ bos_token }}[{{ messages[0].content }}]");
    EXPECT_EQ(source->bos_token, "<s>");
    EXPECT_EQ(source->eos_token, "</s>");
}

TEST(template_source, gguf_without_template_is_an_error) {
    sluice::gguf::metadata kv;
    kv.set_string("general.architecture", "llama");
    std::vector<std::byte> bytes = sluice::gguf::encode_header(kv, {}, 32);
    scratch_file f("no_template.gguf", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    auto source = load_template_source(f.path());
    ASSERT_FALSE(source);
    EXPECT_NE(source.error().message.find("no tokenizer.chat_template key"), std::string::npos)
        << source.error().message;
}

} // namespace
