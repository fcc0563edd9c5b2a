// Speculative decoding through `sluice serve` on the bundled model with the model as its own draft: greedy
// answers identical in every mode, the `speculative` request field (bad values are a 400 naming the field), the
// draft in /health's memory plan, and the /metrics counters moving when drafts are verified.
#include "../cli/process.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

namespace sluice::test {
namespace {

namespace json = boost::json;

std::filesystem::path bundled_model() {
    return std::filesystem::path(SLUICE_SOURCE_DIR) / "models" / "sluice-tiny-moe.gguf";
}

double metric(unsigned short port, const std::string& name) {
    const auto r = send_request(port, "GET", "/metrics");
    EXPECT_EQ(r.status, 200);
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(name + " ", 0) == 0) {
            return std::stod(line.substr(name.size() + 1));
        }
    }
    ADD_FAILURE() << "no metric " << name;
    return -1;
}

std::string body(const std::string& speculative, const std::string& content = "What is 478 + 356?") {
    json::object o{{"messages", json::array{json::object{{"role", "user"}, {"content", content}}}},
                   {"max_tokens", 40},
                   {"temperature", 0}};
    std::string text = json::serialize(o);
    if (!speculative.empty()) {
        text.pop_back();
        text += ",\"speculative\":" + speculative + "}";
    }
    return text;
}

TEST(speculative_serve, greedy_answers_are_the_same_in_every_mode_and_the_counters_move) {
    const auto model = bundled_model();
    server_process server({"--draft", model.string(), "--ctx", "512"}, model);
    const auto port = server.port();

    const auto health = body_json(send_request(port, "GET", "/health"));
    ASSERT_TRUE(health.is_object()) << server.log();
    ASSERT_TRUE(health.as_object().contains("draft"));
    EXPECT_GT(health.at("memory").at("draft_bytes").to_number<double>(), 0.0);
    EXPECT_LE(health.at("memory").at("planned_bytes").to_number<double>(),
              health.at("memory").at("budget_bytes").to_number<double>());

    const double drafted0 = metric(port, "sluice_speculative_drafted_tokens_total");
    const double accepted0 = metric(port, "sluice_speculative_accepted_tokens_total");
    for (const char* content : {"What is 478 + 356?", "Reverse the word \"water\".", "What is the capital of Peru?"}) {
        const auto plain = post_json(port, "/v1/chat/completions", body(R"({"mode":"off"})", content));
        ASSERT_EQ(plain.status, 200) << plain.body;
        const auto expected = body_json(plain).at("choices").at(0).at("message").at("content");
        for (const char* mode : {R"({"mode":"draft","max_draft":4,"adaptive":false})",
                                 R"({"mode":"lookup","max_draft":4,"adaptive":false})", R"({"mode":"draft"})", ""}) {
            const auto r = post_json(port, "/v1/chat/completions", body(mode, content));
            ASSERT_EQ(r.status, 200) << r.body;
            EXPECT_EQ(body_json(r).at("choices").at(0).at("message").at("content"), expected) << mode;
        }
    }
    // A fixed-length draft step with the model as its own draft: every drafted token accepted, and reported.
    const auto r = post_json(port, "/v1/chat/completions", body(R"({"mode":"draft","max_draft":3,"adaptive":false})"));
    ASSERT_EQ(r.status, 200);
    const auto timings = body_json(r).at("timings");
    ASSERT_TRUE(timings.as_object().contains("draft_n")) << r.body;
    EXPECT_EQ(timings.at("draft_n"), timings.at("draft_n_accepted"));
    const double drafted1 = metric(port, "sluice_speculative_drafted_tokens_total");
    const double accepted1 = metric(port, "sluice_speculative_accepted_tokens_total");
    EXPECT_GT(drafted1, drafted0);
    EXPECT_GT(accepted1, accepted0);
    EXPECT_GT(metric(port, "sluice_speculative_verify_steps_total"), 0.0);
}

TEST(speculative_serve, bad_speculative_fields_are_a_400_naming_the_field) {
    server_process server({"--ctx", "256"}, bundled_model());
    const std::pair<const char*, const char*> cases[] = {
        {R"("fast")", "speculative"},
        {R"({"mode":"fast"})", "speculative.mode"},
        {R"({"mode":3})", "speculative.mode"},
        {R"({"max_draft":0})", "speculative.max_draft"},
        {R"({"max_draft":65})", "speculative.max_draft"},
        {R"({"max_draft":2.5})", "speculative.max_draft"},
        {R"({"adaptive":"yes"})", "speculative.adaptive"},
        {R"({"draft_model":"x.gguf"})", "speculative.draft_model"},
        {R"({"mode":"draft"})", "speculative.mode"}, // this server has no draft model
    };
    for (const auto& [value, param] : cases) {
        const auto r = post_json(server.port(), "/v1/chat/completions", body(value));
        EXPECT_EQ(r.status, 400) << value << ": " << r.body;
        EXPECT_EQ(openai_error_problem(r), "") << value;
        const auto v = body_json(r);
        ASSERT_TRUE(v.is_object()) << r.body;
        EXPECT_EQ(v.at("error").at("param"), json::value(param)) << value << ": " << r.body;
    }
    const auto legacy = post_json(server.port(), "/v1/completions",
                                  R"({"prompt":"In the beginning","max_tokens":8,"temperature":0,)"
                                  R"("speculative":{"mode":"lookup"}})");
    EXPECT_EQ(legacy.status, 200) << legacy.body;
    EXPECT_TRUE(server.running());
}

TEST(speculative_serve, a_draft_with_another_vocabulary_stops_the_server_with_a_message) {
    const auto r =
        run_process(sluice_exe() + " serve --port 0 --threads 2 -m " + shell_quote(bundled_model().string()) +
                    " --draft " + shell_quote(tiny_model().string()));
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("same vocabulary"), std::string::npos) << r.err;
    const auto missing = run_process(sluice_exe() + " serve --port 0 --draft /nonexistent/draft.gguf");
    EXPECT_NE(missing.status, 0);
    EXPECT_NE(missing.err.find("--draft /nonexistent/draft.gguf"), std::string::npos) << missing.err;
}

} // namespace
} // namespace sluice::test
