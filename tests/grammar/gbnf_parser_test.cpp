// parse_gbnf: the syntax llama-server accepts, errors with line and column, and bounds on hostile text.
#include "grammar_test_util.hpp"

#include <string>

namespace sluice::grammar::test {
namespace {

TEST(gbnf_parser, accepts_rules_alternatives_groups_and_comments) {
    auto g = parse_or_fail(R"(# a greeting
root ::= greeting " " name   # trailing comment
greeting ::= "hello" | "hi"
name ::= ( "world"
         | "there" )
)");
    EXPECT_TRUE(matches(g, "hello world"));
    EXPECT_TRUE(matches(g, "hi there"));
    EXPECT_FALSE(matches(g, "hey world"));
    EXPECT_FALSE(matches(g, "hello"));
}

TEST(gbnf_parser, alternatives_may_continue_on_a_line_starting_with_a_bar) {
    auto g = parse_or_fail("root ::= \"a\"\n    | \"b\"\n");
    EXPECT_TRUE(matches(g, "a"));
    EXPECT_TRUE(matches(g, "b"));
}

TEST(gbnf_parser, string_escapes_decode) {
    auto g = parse_or_fail(R"(root ::= "\n\t\"\\\x41\u00e9\U0001F600")");
    EXPECT_TRUE(matches(g, "\n\t\"\\A\xc3\xa9\xf0\x9f\x98\x80"));
    EXPECT_FALSE(matches(g, "\n\t\"\\A"));
}

TEST(gbnf_parser, character_classes_ranges_negation_and_dot) {
    auto g = parse_or_fail(R"(root ::= [a-c0-9] [^"\\] .)");
    EXPECT_TRUE(matches(g, "a!x"));
    EXPECT_TRUE(matches(g, "9\xc3\xa9\xe2\x82\xac")); // é and € are single code points
    EXPECT_FALSE(matches(g, "d!x"));
    EXPECT_FALSE(matches(g, "a\"x"));
    EXPECT_FALSE(matches(g, "a\\x"));
}

TEST(gbnf_parser, repetitions_count_exactly) {
    auto g = parse_or_fail(R"(root ::= "a"* "b"+ "c"? "d"{2} "e"{1,} "f"{1,3})");
    EXPECT_TRUE(matches(g, "bddef"));
    EXPECT_TRUE(matches(g, "aaabbbcddeeefff"));
    EXPECT_FALSE(matches(g, "ddef"));    // b+ needs one
    EXPECT_FALSE(matches(g, "bdef"));    // d{2}
    EXPECT_FALSE(matches(g, "bddf"));    // e{1,}
    EXPECT_FALSE(matches(g, "bddeffff")); // f{1,3}
    EXPECT_FALSE(matches(g, "bccddef"));  // c?
}

TEST(gbnf_parser, repetition_of_a_group_and_a_literal) {
    auto g = parse_or_fail(R"(root ::= ("ab" | "c"){2,3} "xy"*)");
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_TRUE(matches(g, "ccabxyxy"));
    EXPECT_FALSE(matches(g, "ab"));
    EXPECT_FALSE(matches(g, "ababab" "ab"));
    EXPECT_FALSE(matches(g, "ccx"));
}

TEST(gbnf_parser, recursive_rules_nest) {
    auto g = parse_or_fail(R"g(root ::= "(" root ")" | "x")g");
    EXPECT_TRUE(matches(g, "x"));
    EXPECT_TRUE(matches(g, "(((x)))"));
    EXPECT_FALSE(matches(g, "((x)"));
}

void expect_error(std::string_view text, std::string_view needle) {
    auto g = parse_gbnf(text);
    ASSERT_FALSE(g) << text;
    EXPECT_NE(g.error().message.find(needle), std::string::npos) << g.error().message;
}

TEST(gbnf_parser, errors_name_line_and_column) {
    expect_error("root ::= \"a\"\nfoo = \"b\"\n", "line 2, column 5: expected ::=");
    expect_error("root ::= \"abc\n", "line 1, column 14: unterminated string literal");
    expect_error("root ::= [a-\n", "unterminated character class");
    expect_error("root ::= \"\\q\"", "line 1, column 11: unknown escape");
    expect_error("root ::= \"a\" )", "unexpected character ')'");
    expect_error("root ::= ( \"a\"", "expected )");
    expect_error("root ::= \"a\"{3,1}", "n < m");
    expect_error("root ::= [z-a]", "out of order");
}

TEST(gbnf_parser, surrogate_code_points_are_refused_since_no_text_holds_one) {
    expect_error("root ::= \"\\uD800\"", "surrogates");
    expect_error("root ::= [\\uD800-\\uDFFF]", "surrogates");
    expect_error("root ::= \"\xed\xa0\x80\"", "surrogates"); // U+D800 written as (invalid) UTF-8
    // A range around them still parses: the matcher leaves the surrogates out.
    EXPECT_TRUE(sluice::grammar::parse_gbnf("root ::= [\\u0000-\\uFFFF]"));
}

TEST(gbnf_parser, refuses_undefined_rules_missing_root_and_duplicates) {
    expect_error("root ::= thing\n", "line 1, column 10: undefined rule 'thing'");
    expect_error("start ::= \"a\"\n", "no rule named 'root'");
    expect_error("root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1: rule 'root' is defined twice");
}

TEST(gbnf_parser, refuses_left_recursion) {
    expect_error("root ::= root \"a\" | \"a\"\n", "left recursion");
    expect_error("root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"b\"\n", "left recursion");
    expect_error("root ::= (\"a\"?)*\n", "left recursion");
    // Right recursion and recursion after text are fine.
    EXPECT_TRUE(parse_gbnf("root ::= \"a\" root | \"a\"\n"));
}

TEST(gbnf_parser, hostile_nesting_is_refused_without_recursing) {
    const std::string deep = "root ::= " + std::string(30000, '(') + "\"a\"" + std::string(30000, ')');
    expect_error(deep, "nested deeper than 64");
    const std::string ok = "root ::= " + std::string(60, '(') + "\"a\"" + std::string(60, ')');
    EXPECT_TRUE(matches(parse_or_fail(ok), "a"));
}

TEST(gbnf_parser, hostile_sizes_are_refused) {
    expect_error("root ::= \"a\"{100000}", "repetition count above 4096");
    expect_error(std::string(2 << 20, ' '), "longer than");
    // 300 runs of 4096 copies expand past the element bound.
    std::string many = "root ::= ";
    for (int i = 0; i < 300; ++i) {
        many += "\"a\"{4096} ";
    }
    expect_error(many, "expands to more than");
}

} // namespace
} // namespace sluice::grammar::test
