// The official `openai` npm client and the `ws` WebSocket client against `sluice serve` (needs node and the
// server_npm fixture).
#include "../cli/process.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

namespace sluice::test {
namespace {

TEST(openai_client, official_client_streams_completes_aborts_and_server_stays_healthy) {
    server_process server({"--api-key", "test-key", "--parallel", "1"});
    const auto r = run_process(
        "node " + shell_quote(std::string(SLUICE_SOURCE_DIR) + "/tests/server/openai_client.mjs") + " " +
        shell_quote(std::string(SLUICE_NPM_CACHE) + "/openai-6.30.1") + " " + server.base_url() + " test-key");
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_NE(r.out.find("openai client: ok"), std::string::npos) << r.out;
    // The aborted stream was noticed and its generation stopped early.
    std::smatch m;
    std::string log;
    for (int i = 0; i < 200 && m.empty(); ++i) {
        log = server.log();
        std::regex_search(log, m, std::regex(R"(finish=disconnected .* completion=(\d+))"));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_FALSE(m.empty()) << log;
    EXPECT_LT(std::stoi(m[1].str()), 3000);
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

TEST(ws_client, npm_ws_client_runs_concurrent_requests_cancels_and_closes_on_v1_ws) {
    server_process server({"--api-key", "test-key", "--parallel", "2"});
    const auto r =
        run_process("node " + shell_quote(std::string(SLUICE_SOURCE_DIR) + "/tests/server/ws_client.mjs") + " " +
                    shell_quote(std::string(SLUICE_NPM_CACHE) + "/ws-8.18.3") + " " + server.base_url() + " test-key");
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_NE(r.out.find("ws client: ok"), std::string::npos) << r.out;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

} // namespace
} // namespace sluice::test
