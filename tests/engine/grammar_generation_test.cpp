// Generation under a grammar on the bundled model: the output follows the grammar whatever the sampler draws,
// the generation stops as soon as the document is complete, logprobs keep reporting the model's raw
// distribution, and an invalid grammar fails the request.
#include "runtime/engine/model.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/tokenizer/tokenizer.hpp"
#include "tests/engine/tiny_model.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace sluice {
namespace {

using test::run_sync;

std::shared_ptr<model> bundled() {
    static const auto m = test::load_model(std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf",
                                           64, 512);
    return m;
}

using outcome = test::generation_outcome;

outcome generate(generate_request req) {
    session s(bundled());
    return test::run_generation(s, std::move(req));
}

generate_request chat(std::string question, std::string grammar, std::uint64_t seed) {
    generate_request req;
    req.messages = boost::json::array{boost::json::object{{"role", "user"}, {"content", std::move(question)}}};
    req.grammar = std::move(grammar);
    req.sampling.temperature = 1.0f;
    req.sampling.seed = seed;
    req.max_tokens = 400;
    return req;
}

TEST(grammar_generation, output_is_one_of_the_grammar_s_words_and_stops_there) {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        const auto o = generate(chat("What is the capital of France?", R"(root ::= "yes" | "no" | "maybe")", seed));
        ASSERT_TRUE(o.error.empty()) << o.error;
        EXPECT_TRUE(o.text == "yes" || o.text == "no" || o.text == "maybe") << o.text;
        EXPECT_EQ(o.summary.reason, finish_reason::stop);
    }
}

TEST(grammar_generation, logprobs_report_the_raw_distribution) {
    auto req = chat("What is the capital of France?", R"(root ::= "yes" | "no")", 3);
    req.sampling.temperature = 0.0f;
    req.top_logprobs = 5;
    const auto o = generate(req);
    ASSERT_TRUE(o.error.empty()) << o.error;
    ASSERT_FALSE(o.events.empty());
    const auto& first = o.events.front();
    ASSERT_EQ(first.top.size(), 5U);
    // Unconstrained, the model answers "Paris": its raw favourite is not a start of "yes" or "no", and the
    // chosen token's logprob is below it.
    const auto best = bundled()->vocab().piece(first.top.front().token);
    EXPECT_FALSE(std::string_view("yes").starts_with(best) || std::string_view("no").starts_with(best)) << best;
    EXPECT_LT(first.logprob, first.top.front().logprob);
}

TEST(grammar_generation, json_schema_output_parses_and_validates_at_any_temperature) {
    auto gbnf = grammar::json_schema_to_gbnf(boost::json::parse(R"({"type":"object","properties":{
        "city":{"type":"string","maxLength":12},"population":{"type":"integer"},
        "capital":{"type":"boolean"},"size":{"enum":["small","large"]}},
        "required":["city","population","capital","size"],"additionalProperties":false})"));
    ASSERT_TRUE(gbnf) << gbnf.error().message;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        const auto o = generate(chat("What is the capital of Peru?", *gbnf, seed));
        ASSERT_TRUE(o.error.empty()) << o.error;
        EXPECT_EQ(o.summary.reason, finish_reason::stop) << o.text;
        boost::system::error_code ec;
        const auto doc = boost::json::parse(o.text, ec);
        ASSERT_FALSE(ec) << o.text;
        const auto& obj = doc.as_object();
        EXPECT_EQ(obj.size(), 4U) << o.text;
        EXPECT_LE(obj.at("city").as_string().size(), 12U * 4) << o.text;
        EXPECT_TRUE(obj.at("population").is_int64() || obj.at("population").is_uint64()) << o.text;
        EXPECT_TRUE(obj.at("capital").is_bool()) << o.text;
        EXPECT_TRUE(obj.at("size") == "small" || obj.at("size") == "large") << o.text;
    }
}

TEST(grammar_generation, stops_with_length_when_max_tokens_comes_first) {
    auto req = chat("Reverse the word \"garden\".", R"(root ::= [a-z]{60})", 2);
    req.max_tokens = 3;
    const auto o = generate(req);
    ASSERT_TRUE(o.error.empty()) << o.error;
    EXPECT_EQ(o.summary.reason, finish_reason::length);
    for (const char c : o.text) {
        EXPECT_TRUE(c >= 'a' && c <= 'z') << o.text;
    }
}

TEST(grammar_generation, invalid_grammar_fails_the_request_naming_the_place) {
    const auto o = generate(chat("hi", "root ::= \"a\" | \n  bad ::=", 1));
    ASSERT_FALSE(o.error.empty());
    EXPECT_NE(o.error.find("grammar: line"), std::string::npos) << o.error;
    const auto left = generate(chat("hi", "root ::= root \"a\"", 1));
    EXPECT_NE(left.error.find("left recursion"), std::string::npos) << left.error;
}

} // namespace
} // namespace sluice
