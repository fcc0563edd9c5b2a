// libFuzzer target: arbitrary bytes as the body of POST /v1/chat/completions and /v1/completions. The parser
// must answer every body with a request or a 400 naming the field, never crash, and never let through a request
// the engine cannot run (a max_tokens, temperature or stop list out of range).
#include "runtime/generate/sampler.hpp"
#include "server/openai_request.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sluice::server;
    if (size == 0)
        return 0;
    // The first byte picks the endpoint; the rest is the body.
    const completion_kind kind = data[0] & 1 ? completion_kind::completion : completion_kind::chat;
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    (void)parse_json_object(body);
    auto parsed = parse_completion_request(body, kind, 42);
    if (!parsed) {
        const int status = static_cast<int>(parsed.error().status);
        if (status < 400 || status >= 500 || parsed.error().message.empty())
            std::abort(); // a malformed body is the client's error, with a message
        return 0;
    }
    if (!sluice::runtime::validate(parsed->generate.sampling))
        std::abort(); // an unusable sampling parameter got through
    if (kind == completion_kind::chat ? parsed->generate.messages.empty() : false)
        std::abort(); // a chat request without messages
    return 0;
}
