// token_filter over the real Qwen3 vocabulary (151k byte-level BPE tokens) and Llama 2's SentencePiece one: the
// mask equals checking every token's bytes one by one, control tokens stay out except where a grammar names one
// (<[id]>), end-of-generation comes in only with a complete document, and a random walk through the masks always
// produces a document the schema allows.
#include "grammar_test_util.hpp"

#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/token_mask.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <boost/json/parse.hpp>

#include <filesystem>
#include <random>

namespace sluice::grammar::test {
namespace {

const std::filesystem::path qwen3_json = std::filesystem::path(SLUICE_NPM_CACHE) / "qwen3/models/tokenizer.json";

class token_mask_test : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto tok = tokenizer::load_tokenizer(qwen3_json);
        ASSERT_TRUE(tok) << tok.error().message;
        vocab_ = new tokenizer::tokenizer(std::move(*tok));
        trie_ = std::make_shared<const token_trie>(*vocab_, vocab_->size());
    }
    static void TearDownTestSuite() {
        trie_.reset();
        delete vocab_;
    }
    static std::int32_t id(std::string_view text) {
        auto t = vocab_->find(text);
        EXPECT_TRUE(t) << text;
        return t ? *t : -1;
    }
    /// The mask in the filter's current state must equal trying each token's bytes on a copy of the matcher.
    static void expect_mask_is_exact(token_filter& f, std::shared_ptr<const grammar> g, std::string_view prefix) {
        const auto& mask = f.allowed();
        matcher m(std::move(g));
        ASSERT_TRUE(m.accept(prefix));
        const auto at = m.current();
        std::size_t allowed = 0;
        for (std::size_t i = 0; i < vocab_->size(); ++i) {
            const auto t = static_cast<std::int32_t>(i);
            const auto bytes = trie_->bytes(t);
            bool ok = false;
            if (trie_->is_end_of_generation(t)) {
                ok = m.is_complete(at);
            } else if (!bytes.empty()) {
                m.restore(at);
                ok = m.accept(bytes);
            }
            allowed += ok ? 1 : 0;
            ASSERT_EQ(mask.allows(t), ok) << "token " << t << " '" << vocab_->token_text(t) << "' after '" << prefix
                                          << "'";
        }
        EXPECT_GT(allowed, 0U);
    }

    static inline tokenizer::tokenizer* vocab_ = nullptr;
    static inline std::shared_ptr<const token_trie> trie_;
};

TEST_F(token_mask_test, mask_equals_checking_every_token) {
    auto g = compile_json_schema(boost::json::parse(
        R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name"]})"));
    ASSERT_TRUE(g) << g.error().message;
    token_filter f(*g, trie_);
    std::string text;
    for (std::string_view piece : {"", "{", "\"", "name", "\":", " \"", "h\xc3", "\xa9llo", "\"", ",", " \"n\": 1", "2"}) {
        if (!piece.empty()) {
            // Feed the piece through the filter's matcher the way tokens would arrive: as the bytes of a token.
            auto t = vocab_->encode(std::string(piece), {});
            std::string decoded;
            for (const auto tok : t) {
                ASSERT_TRUE(f.accept(tok)) << piece;
            }
            text += piece;
        }
        expect_mask_is_exact(f, *g, text);
    }
}

TEST_F(token_mask_test, text_subtrees_are_allowed_whole_only_where_every_code_point_loops) {
    // String content that excludes a few non-ASCII code points and ASCII letters must not take the shortcut.
    for (const char* text : {R"(root ::= "\"" [^"\\\u00e9\u4e00-\u4eff]* "\"")",
                             R"(root ::= "\"" [^"\\Q]* "\"")",
                             R"(root ::= "\"" [^"\\]{0,3} "\"")"}) {
        auto g = parse_or_fail(text);
        token_filter f(g, trie_);
        ASSERT_TRUE(f.accept(id("\"")));
        expect_mask_is_exact(f, g, "\"");
        ASSERT_TRUE(f.accept(id("ab")));
        expect_mask_is_exact(f, g, "\"ab");
    }
}

TEST_F(token_mask_test, byte_level_tokens_are_matched_as_their_real_bytes) {
    auto g = parse_or_fail(R"(root ::= " yes")");
    token_filter f(g, trie_);
    const auto& mask = f.allowed();
    EXPECT_TRUE(mask.allows(id("Ġyes")));  // stored as "Ġyes", bytes " yes"
    EXPECT_TRUE(mask.allows(id("Ġ")));
    EXPECT_FALSE(mask.allows(id("yes")));
    auto g2 = parse_or_fail("root ::= \"\\u0120\"+"); // the character Ġ itself: bytes C4 A0
    token_filter f2(g2, trie_);
    EXPECT_FALSE(f2.allowed().allows(id("Ġ")));
    EXPECT_TRUE(f2.allowed().any_text);
}

TEST(token_mask_spm, sentencepiece_pieces_and_byte_tokens_are_matched_as_their_bytes) {
    auto tok = tokenizer::load_tokenizer(std::filesystem::path(SLUICE_NPM_CACHE) / "llama2/models/tokenizer.json");
    ASSERT_TRUE(tok) << tok.error().message;
    const auto trie = std::make_shared<const token_trie>(*tok, tok->size());
    auto g = parse_or_fail("root ::= \" yes\" \"\\n\"");
    token_filter f(g, trie);
    const auto yes = tok->find("\xe2\x96\x81yes"); // "▁yes": a space and "yes"
    const auto newline = tok->find("<0x0A>");        // a byte-fallback token
    ASSERT_TRUE(yes && newline);
    EXPECT_TRUE(f.allowed().allows(*yes));
    EXPECT_FALSE(f.allowed().allows(*newline));
    ASSERT_TRUE(f.accept(*yes));
    EXPECT_TRUE(f.allowed().allows(*newline));
    ASSERT_TRUE(f.accept(*newline));
    EXPECT_TRUE(f.only_end_remains());
}

TEST_F(token_mask_test, control_tokens_excluded_and_end_of_generation_only_when_complete) {
    auto g = parse_or_fail(R"(root ::= "a" "b"?)");
    token_filter f(g, trie_);
    const auto im_end = id("<|im_end|>");
    const auto im_start = id("<|im_start|>");
    EXPECT_FALSE(f.allowed().allows(im_end));
    EXPECT_FALSE(f.allowed().allows(im_start));
    ASSERT_TRUE(f.accept(id("a")));
    EXPECT_TRUE(f.allowed().allows(im_end));
    EXPECT_TRUE(f.allowed().allows(id("b")));
    EXPECT_FALSE(f.allowed().allows(im_start));
    EXPECT_FALSE(f.only_end_remains());
    ASSERT_TRUE(f.accept(id("b")));
    EXPECT_TRUE(f.only_end_remains());
    EXPECT_FALSE(f.accept(id("b")));
}

TEST_F(token_mask_test, a_control_token_is_allowed_exactly_where_the_grammar_names_it) {
    const auto im_start = id("<|im_start|>");
    ASSERT_TRUE(vocab_->is_control(im_start));
    ASSERT_FALSE(trie_->is_end_of_generation(im_start));
    const std::string ref = "<[" + std::to_string(im_start) + "]>";
    auto g = parse_or_fail("root ::= \"a\" " + ref + " \"b\" | \"x\" ( [^\"] | \"<\" )*");
    token_filter f(g, trie_);
    EXPECT_FALSE(f.allowed().allows(im_start));
    ASSERT_TRUE(f.accept(id("a")));
    // Only the token itself: not its text spelled by text tokens, not another control token.
    EXPECT_TRUE(f.allowed().allows(im_start));
    EXPECT_FALSE(f.allowed().allows(id("<")));
    EXPECT_FALSE(f.allowed().allows(id("<|im_end|>")));
    EXPECT_FALSE(f.allowed().allows(id("<tool_call>")));
    expect_mask_is_exact(f, g, "a");
    ASSERT_TRUE(f.accept(im_start));
    EXPECT_FALSE(f.allowed().allows(im_start));
    ASSERT_TRUE(f.accept(id("b")));
    EXPECT_TRUE(f.only_end_remains());
    // Free text (a negated class, `.`) never lets a control token in.
    token_filter free(g, trie_);
    ASSERT_TRUE(free.accept(id("x")));
    EXPECT_TRUE(free.allowed().allows(id("<")));
    EXPECT_FALSE(free.allowed().allows(im_start));
    expect_mask_is_exact(free, g, "x");
    auto any = parse_or_fail("root ::= .*");
    token_filter dot(any, trie_);
    EXPECT_FALSE(dot.allowed().allows(im_start));
    EXPECT_FALSE(dot.accept(im_start));
}

TEST(token_ref_gbnf, token_references_parse_and_bad_ones_name_the_place) {
    using namespace std::string_view_literals;
    EXPECT_TRUE(matches(parse_or_fail("root ::= \"a\" <[5]>"), "a\xFF\x00\x00\x05"sv));
    EXPECT_FALSE(matches(parse_or_fail("root ::= \"a\" <[5]>"), "a\xFF\x00\x00\x06"sv));
    EXPECT_FALSE(matches(parse_or_fail("root ::= \"a\" <[5]>"), "a<[5]>"sv));
    EXPECT_FALSE(matches(parse_or_fail("root ::= [^a]"), "\xFF\x00\x00\x05"sv));
    EXPECT_FALSE(matches(parse_or_fail("root ::= ."), "\xFF\x00\x00\x05"sv));
    for (const char* bad : {"root ::= <[]>", "root ::= <[16777216]>", "root ::= <[5>", "root ::= <[5]"}) {
        EXPECT_FALSE(parse_gbnf(bad)) << bad;
    }
}

TEST_F(token_mask_test, random_walks_through_the_masks_give_valid_documents) {
    auto g = compile_json_schema(boost::json::parse(R"({"type":"object","properties":{
        "id":{"type":"integer"},"ok":{"type":"boolean"},"color":{"enum":["red","green"]},
        "tags":{"type":"array","items":{"type":"string","maxLength":4},"maxItems":3}},
        "required":["id","ok","color","tags"],"additionalProperties":false})"));
    ASSERT_TRUE(g) << g.error().message;
    std::mt19937 rng(7);
    for (int walk = 0; walk < 20; ++walk) {
        token_filter f(*g, trie_);
        std::string text;
        for (int step = 0; step < 400 && !f.only_end_remains(); ++step) {
            const auto& mask = f.allowed();
            std::vector<std::int32_t> choices;
            for (std::size_t i = 0; i < vocab_->size(); ++i) {
                const auto t = static_cast<std::int32_t>(i);
                if (mask.allows(t) && !trie_->is_end_of_generation(t)) {
                    choices.push_back(t);
                }
            }
            ASSERT_FALSE(choices.empty()) << text;
            const auto t = choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(rng)];
            ASSERT_TRUE(f.accept(t));
            text += trie_->bytes(t);
        }
        ASSERT_TRUE(f.only_end_remains()) << text;
        boost::system::error_code ec;
        const auto doc = boost::json::parse(text, ec);
        ASSERT_FALSE(ec) << text;
        const auto& o = doc.as_object();
        EXPECT_TRUE(o.at("id").is_int64() || o.at("id").is_uint64()) << text;
        EXPECT_TRUE(o.at("ok").is_bool()) << text;
        EXPECT_TRUE(o.at("color") == "red" || o.at("color") == "green") << text;
        EXPECT_LE(o.at("tags").as_array().size(), 3U) << text;
    }
}

} // namespace
} // namespace sluice::grammar::test
