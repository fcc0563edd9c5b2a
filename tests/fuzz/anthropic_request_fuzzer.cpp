// libFuzzer target: arbitrary bytes as the body of POST /v1/messages and /v1/messages/count_tokens. The parser
// must answer every body with a request or a 4xx with a message, never crash, and never let through a request
// the engine cannot run (no messages, max_tokens 0 or sampling out of range when generating).
#include "runtime/generate/sampler.hpp"
#include "server/anthropic_request.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sluice::server;
    if (size == 0)
        return 0;
    // The first byte picks the endpoint; the rest is the body.
    const messages_endpoint endpoint = data[0] & 1 ? messages_endpoint::count_tokens : messages_endpoint::create;
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    auto parsed = parse_messages_request(body, endpoint, 42);
    if (!parsed) {
        const int status = static_cast<int>(parsed.error().status);
        if (status < 400 || status >= 500 || parsed.error().message.empty())
            std::abort(); // a malformed body is the client's error, with a message
        return 0;
    }
    if (parsed->chat.generate.messages.empty())
        std::abort(); // nothing for the template to render
    if (endpoint == messages_endpoint::create &&
        (parsed->chat.generate.max_tokens == 0 || !sluice::runtime::validate(parsed->chat.generate.sampling)))
        std::abort(); // an unbounded generation or an unusable sampling parameter got through
    return 0;
}
