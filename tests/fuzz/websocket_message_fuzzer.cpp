// libFuzzer target: arbitrary bytes as one text message of the /v1/ws protocol. Every message must come back as
// a cancel or request carrying a non-empty id, or as an error event with a 4xx status and a message; a request
// that gets through must hold sampling parameters the engine accepts and (for chat) messages.
#include "runtime/generate/sampler.hpp"
#include "server/websocket_message.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sluice::server;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const ws_message msg = parse_ws_message(text, 7);
    if (const auto* bad = std::get_if<ws_message_error>(&msg)) {
        const int status = static_cast<int>(bad->error.status);
        if (status < 400 || status >= 500 || bad->error.message.empty())
            std::abort(); // a malformed message is the client's error, with a message
        if (bad->id && bad->id->empty())
            std::abort(); // an error event never echoes an empty id
        return 0;
    }
    if (const auto* cancel = std::get_if<ws_cancel>(&msg)) {
        if (cancel->id.empty())
            std::abort();
        return 0;
    }
    const auto& req = std::get<ws_request>(msg);
    if (req.id.empty() || !sluice::runtime::validate(req.request.generate.sampling))
        std::abort(); // an unusable request got through
    if (req.request.kind == completion_kind::chat && req.request.generate.messages.empty())
        std::abort();
    return 0;
}
