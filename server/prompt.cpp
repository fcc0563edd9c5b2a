// Rendering and counting a request's prompt off the event loop.
#include "server/prompt.hpp"

#include "runtime/grammar/grammar.hpp"
#include "runtime/grammar/token_mask.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace sluice::server {
namespace {

namespace asio = boost::asio;

/// Whether `message` comes from the template: jinja2's exception name leads it ("TemplateLimitError: ...",
/// "UndefinedError: ...", "TemplateError: " for the template's own raise_exception).
bool is_template_error(std::string_view message) {
    const auto colon = message.find(": ");
    if (colon == std::string_view::npos) {
        return false;
    }
    const std::string_view name = message.substr(0, colon);
    return name.size() > 5 && name.ends_with("Error") &&
           std::all_of(name.begin(), name.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}

} // namespace

asio::awaitable<api_result<std::vector<std::int32_t>>> prompt_tokens_for(server_state& st,
                                                                          const completion_request& request) {
    const session& probe = st.slots.any_session();
    if (request.generate.grammar.find("<[") != std::string::npos) {
        // A grammar naming tokens by id (<[id]>) must name control tokens of this model: checked against its
        // vocabulary trie, built once per model on the render pool.
        auto check = [&st, &request]() -> asio::awaitable<result<void>> {
            auto g = grammar::parse_gbnf(request.generate.grammar);
            if (!g) {
                co_return g.error();
            }
            co_return grammar::check_token_refs(**g, *st.loaded->token_trie());
        };
        auto refs = co_await asio::co_spawn(st.render_pool.get_executor(), check(),
                                            asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
        if (!refs) {
            co_return bad_request("grammar: " + refs.error().message, "grammar", "invalid_value");
        }
    }
    // The template runs on the render pool while this coroutine waits: a render that uses its whole time
    // budget delays neither /health nor anyone's tokens.
    auto render = [&probe, &request]() -> asio::awaitable<result<std::vector<std::int32_t>>> {
        co_return probe.prompt_tokens(request.generate);
    };
    // The render is not bound to the caller's cancellation slot: a render runs to its end (its own limits bound
    // it), and a cancel meanwhile is the caller's to see afterwards. Bound, a cancel landing as the render ends made
    // Boost 1.81's co_spawn entry point throw operation_aborted on its way back from the render pool, outside any
    // handler, which ended the process (std::terminate in a pool thread).
    auto prompt = co_await asio::co_spawn(st.render_pool.get_executor(), render(),
                                          asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
    const std::string field = request.kind == completion_kind::chat ? "messages" : "prompt";
    if (!prompt) {
        const std::string& m = prompt.error().message;
        co_return bad_request(m, field, is_template_error(m) ? std::optional<std::string>("template_error")
                                                             : std::nullopt);
    }
    if (prompt->size() >= probe.context_size()) {
        co_return bad_request("the prompt has " + std::to_string(prompt->size()) + " tokens; the context holds " +
                                  std::to_string(probe.context_size()) + " (including at least one generated token)",
                              field, "context_length_exceeded");
    }
    co_return std::move(*prompt);
}

} // namespace sluice::server
