// Checks each pre-tokenizer's splits on inputs that exercise its regex alternatives and backtracking.
#include "runtime/tokenizer/pre_tokenizer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace tk = sluice::tokenizer;
using pieces = std::vector<std::string>;

pieces split(tk::pre_tokenizer_kind kind, std::string_view text) {
    std::vector<tk::text_span> spans;
    tk::pre_tokenize(kind, text, spans);
    pieces out;
    for (const auto s : spans)
        out.emplace_back(text.substr(s.begin, s.end - s.begin));
    return out;
}

TEST(pre_tokenizer, gpt2_keeps_one_space_with_the_next_word) {
    EXPECT_EQ(split(tk::pre_tokenizer_kind::gpt2, "Hello   world's 123!!"),
              (pieces{"Hello", "  ", " world", "'s", " 123", "!!"}));
    EXPECT_EQ(split(tk::pre_tokenizer_kind::gpt2, "a  \n"), (pieces{"a", "  \n"}));
}

TEST(pre_tokenizer, llama3_groups_digits_by_three_and_contractions_ignore_case) {
    EXPECT_EQ(split(tk::pre_tokenizer_kind::llama3, "1234567 WE'LL"), (pieces{"123", "456", "7", " WE", "'LL"}));
    EXPECT_EQ(split(tk::pre_tokenizer_kind::llama3, "x  \n\n  y"), (pieces{"x", "  \n\n", " ", " y"}));
}

TEST(pre_tokenizer, qwen2_splits_single_digits) {
    EXPECT_EQ(split(tk::pre_tokenizer_kind::qwen2, "ab 123"), (pieces{"ab", " ", "1", "2", "3"}));
}

TEST(pre_tokenizer, gpt_oss_splits_camel_case_with_backtracking) {
    EXPECT_EQ(split(tk::pre_tokenizer_kind::gpt_oss, "HelloWorld HTTPServer"),
              (pieces{"Hello", "World", " HTTPServer"}));
    EXPECT_EQ(split(tk::pre_tokenizer_kind::gpt_oss, "path/to/x\n"), (pieces{"path", "/to", "/x", "\n"}));
}

TEST(pre_tokenizer, deepseek_v3_isolates_digits_and_cjk_first) {
    EXPECT_EQ(split(tk::pre_tokenizer_kind::deepseek_v3, "abc12345中文x"), (pieces{"abc", "123", "45", "中文", "x"}));
    EXPECT_EQ(split(tk::pre_tokenizer_kind::deepseek_v3, ".net"), (pieces{".net"}));
}

TEST(pre_tokenizer, pieces_cover_invalid_utf8_without_gaps) {
    const std::string text = "a\xFF\xC3 b\xE4\xB8";
    const auto p = split(tk::pre_tokenizer_kind::llama3, text);
    std::string joined;
    for (const auto& s : p)
        joined += s;
    EXPECT_EQ(joined, text);
}

TEST(pre_tokenizer, known_gguf_names_map_to_kinds) {
    EXPECT_EQ(tk::pre_tokenizer_from_name("llama-bpe"), tk::pre_tokenizer_kind::llama3);
    EXPECT_EQ(tk::pre_tokenizer_from_name("qwen2"), tk::pre_tokenizer_kind::qwen2);
    EXPECT_EQ(tk::pre_tokenizer_from_name("deepseek-v3"), tk::pre_tokenizer_kind::deepseek_v3);
    EXPECT_EQ(tk::pre_tokenizer_from_name("gpt-4o"), tk::pre_tokenizer_kind::gpt_oss);
    EXPECT_FALSE(tk::pre_tokenizer_from_name("no-such-thing").has_value());
}

TEST(pre_tokenizer, kimi_k2_splits_han_runs_apart_and_matches_the_regex_reference) {
    using k = tk::pre_tokenizer_kind;
    EXPECT_EQ(tk::pre_tokenizer_from_name("kimi-k2"), k::kimi_k2);
    EXPECT_EQ(tk::pre_tokenizer_from_name("glm4"), k::llama3); // GLM-4.5 splits like Llama 3
    EXPECT_EQ(split(k::kimi_k2, "我想在apple工作"), (pieces{"我想在", "apple", "工作"}));
    EXPECT_EQ(split(k::kimi_k2, "a/b"), (pieces{"a", "/b"})); // '/' is not kept after punctuation, unlike o200k
    // Every case of the committed reference: Kimi-K2's pattern run by Python's `regex` module
    // (tests/tokenizer/gen_kimi_k2_splits.py).
    const auto path = std::filesystem::path(SLUICE_SOURCE_DIR) / "tests/tokenizer/data/kimi_k2_splits.json";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const auto doc = boost::json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
    std::size_t n = 0;
    for (const auto& c : doc.at("cases").as_array()) {
        const std::string text(c.at("text").as_string());
        std::vector<tk::text_span> spans;
        tk::pre_tokenize(k::kimi_k2, text, spans);
        std::vector<std::pair<std::int64_t, std::int64_t>> got, want;
        for (const auto s : spans)
            got.emplace_back(s.begin, s.end);
        for (const auto& p : c.at("pieces").as_array())
            want.emplace_back(p.as_array()[0].to_number<std::int64_t>(), p.as_array()[1].to_number<std::int64_t>());
        ASSERT_EQ(got, want) << "text: " << text;
        ++n;
    }
    EXPECT_GT(n, 1500u);
}

} // namespace
