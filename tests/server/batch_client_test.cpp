// `sluice serve --parallel 8` on the bundled model batching concurrent requests of the official `openai` npm
// client: greedy answers at 1, 4 and 8 concurrent requests are the same, and aborting one stream of four leaves
// the others' text as it is alone (needs node and the server_npm fixture).
#include "../cli/process.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <gtest/gtest.h>

namespace sluice::test {
namespace {

TEST(batch_client, concurrent_greedy_requests_answer_as_alone_and_an_abort_leaves_the_others_exact) {
    server_process server({"--parallel", "8", "--ctx", "512"},
                          std::filesystem::path(SLUICE_SOURCE_DIR) / "models/sluice-tiny-moe.gguf");
    const auto r =
        run_process("node " + shell_quote(std::string(SLUICE_SOURCE_DIR) + "/tests/server/batch_client.mjs") + " " +
                    shell_quote(std::string(SLUICE_NPM_CACHE) + "/openai-6.30.1") + " " + server.base_url() + " " +
                    shell_quote(std::string(SLUICE_SOURCE_DIR) + "/tests/fixtures/trained/heldout.jsonl"));
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_NE(r.out.find("batch client: ok"), std::string::npos) << r.out;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
    // The server saw the abort: that generation stopped early, as disconnected.
    EXPECT_NE(server.log().find("finish=disconnected"), std::string::npos) << server.log();
}

} // namespace
} // namespace sluice::test
