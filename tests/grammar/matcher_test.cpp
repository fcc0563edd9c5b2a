// matcher: bytes split anywhere inside UTF-8, rollback by state id, interned states, and the bounds.
#include "grammar_test_util.hpp"

#include <string>

namespace sluice::grammar::test {
namespace {

TEST(matcher, multibyte_code_points_may_arrive_a_byte_at_a_time) {
    auto g = parse_or_fail(R"(root ::= [à-ÿ]+ "!")");
    matcher m(g);
    const std::string text = "\xc3\xa9\xc3\xbf!"; // éÿ!
    for (const char c : text) {
        ASSERT_TRUE(m.accept(std::string(1, c)));
        EXPECT_FALSE(m.is_complete() && c != '!');
    }
    EXPECT_TRUE(m.is_complete());
}

TEST(matcher, a_lead_byte_no_class_can_finish_is_refused_at_once) {
    auto g = parse_or_fail(R"(root ::= [a-z\u00e0-\u00ff]*)");
    matcher m(g);
    EXPECT_TRUE(m.accept("\xc3"));  // U+00C0..U+00FF may follow
    matcher n(g);
    EXPECT_FALSE(n.accept("\xe2")); // only U+2000.. and up: none in the class
    EXPECT_FALSE(n.accept("\xff")); // never UTF-8
    EXPECT_FALSE(n.accept("\xc0\x80")); // overlong
    auto any = parse_or_fail("root ::= .*");
    EXPECT_TRUE(is_prefix(any, "\xed"));      // U+D000..U+D7FF may follow
    EXPECT_FALSE(is_prefix(any, "\xed\xa1")); // only surrogates can: refused at once, not left as a dead end
    EXPECT_TRUE(matches(any, "\xed\x9f\xbf"));
}

TEST(matcher, refused_bytes_leave_the_state_unchanged_and_restore_rolls_back) {
    auto g = parse_or_fail(R"(root ::= "ab" "c"*)");
    matcher m(g);
    const auto start = m.current();
    EXPECT_FALSE(m.accept("ax"));
    EXPECT_EQ(m.current(), start);
    EXPECT_TRUE(m.accept("abcc"));
    EXPECT_TRUE(m.is_complete());
    m.restore(start);
    EXPECT_FALSE(m.is_complete());
    EXPECT_TRUE(m.accept("ab"));
}

TEST(matcher, equal_states_get_equal_ids_so_loops_stay_small) {
    auto g = parse_or_fail(R"(root ::= "\"" [^"]* "\"")");
    matcher m(g);
    ASSERT_TRUE(m.accept("\"a"));
    const auto inside = m.current();
    ASSERT_TRUE(m.accept(std::string(10000, 'x')));
    EXPECT_EQ(m.current(), inside);
    EXPECT_LT(m.node_count(), 16U);
}

TEST(matcher, deep_right_recursion_keeps_working_and_compaction_keeps_the_state) {
    auto g = parse_or_fail(R"(root ::= "[" root "]" | "x")");
    matcher m(g);
    ASSERT_TRUE(m.accept(std::string(3000, '[')));
    EXPECT_TRUE(m.compact(1, 1)); // force it
    ASSERT_TRUE(m.accept("x" + std::string(2999, ']')));
    EXPECT_FALSE(m.is_complete());
    ASSERT_TRUE(m.accept("]"));
    EXPECT_TRUE(m.is_complete());
    EXPECT_FALSE(m.accept("]"));
}

TEST(matcher, can_continue_tells_a_finished_document_from_one_that_may_grow) {
    auto g = parse_or_fail(R"(root ::= "a" "b"?)");
    matcher m(g);
    ASSERT_TRUE(m.accept("a"));
    EXPECT_TRUE(m.is_complete());
    EXPECT_TRUE(m.can_continue(m.current()));
    ASSERT_TRUE(m.accept("b"));
    EXPECT_TRUE(m.is_complete());
    EXPECT_FALSE(m.can_continue(m.current()));
}

TEST(matcher, a_wildly_ambiguous_grammar_is_bounded_not_exhausting) {
    // Each 'a' may belong to any of three rules: stacks multiply until the bound refuses the byte.
    auto g = parse_or_fail("root ::= x*\nx ::= \"a\" | y\ny ::= \"a\" | z\nz ::= \"a\" \"a\"* | \"a\"\n");
    matcher m(g);
    for (int i = 0; i < 200; ++i) {
        if (!m.accept("a")) {
            break;
        }
    }
    EXPECT_LE(m.state_count(), 1000U);
}

} // namespace
} // namespace sluice::grammar::test
