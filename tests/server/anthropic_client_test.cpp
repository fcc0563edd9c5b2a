// The official `@anthropic-ai/sdk` npm client against `sluice serve`'s Messages API (needs node and the
// server_npm fixture).
#include "../cli/process.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

#include <gtest/gtest.h>

namespace sluice::test {
namespace {

TEST(anthropic_client, official_sdk_creates_streams_uses_tools_and_counts_tokens) {
    server_process server({"--api-key", "test-key", "--parallel", "1"});
    const auto r =
        run_process("node " + shell_quote(std::string(SLUICE_SOURCE_DIR) + "/tests/server/anthropic_client.mjs") + " " +
                    shell_quote(std::string(SLUICE_NPM_CACHE) + "/@anthropic-ai/sdk-0.94.0") + " " + server.base_url() +
                    " test-key");
    EXPECT_EQ(r.status, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    EXPECT_NE(r.out.find("anthropic client: ok"), std::string::npos) << r.out;
    EXPECT_EQ(send_request(server.port(), "GET", "/health").status, 200);
}

} // namespace
} // namespace sluice::test
